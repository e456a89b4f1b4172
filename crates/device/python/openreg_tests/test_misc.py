# Adapted from pytorch/pytorch test/cpp_extensions/open_registration_extension/torch_openreg/tests/test_misc.py at a7dd7f978749d4f850e66b6995fc6177c7863108: only the device name changed.
# Owner(s): ["module: PrivateUse1"]

import types
import unittest

import torch
from torch.testing._internal.common_utils import run_tests, skipIfTorchDynamo, TestCase


class TestBackendModule(TestCase):
    def test_backend_module_name(self):
        """Test backend module name query and renaming"""
        self.assertEqual(torch._C._get_privateuse1_backend_name(), "regen")
        # backend can be renamed to the same name multiple times
        torch.utils.rename_privateuse1_backend("regen")
        with self.assertRaisesRegex(RuntimeError, "has already been set"):
            torch.utils.rename_privateuse1_backend("dev")

    def test_backend_module_registration(self):
        """Test backend module registration error handling"""

        def generate_faked_module():
            return types.ModuleType("fake_module")

        with self.assertRaisesRegex(RuntimeError, "Expected one of cpu"):
            torch._register_device_module("dev", generate_faked_module())
        with self.assertRaisesRegex(RuntimeError, "The runtime module of"):
            torch._register_device_module("regen", generate_faked_module())

    def test_backend_module_function(self):
        """Test backend module function access"""
        with self.assertRaisesRegex(RuntimeError, "Try to call torch.regen"):
            torch.utils.backend_registration._get_custom_mod_func("func_name_")
        self.assertTrue(
            torch.utils.backend_registration._get_custom_mod_func("device_count")() == 2
        )

    def test_backend_module_function_error_handling(self):
        """Test error handling for backend module functions"""
        # Test non-existent function
        with self.assertRaisesRegex(RuntimeError, "Try to call torch.regen"):
            torch.utils.backend_registration._get_custom_mod_func("non_existent_func")

        # Test valid function
        device_count = torch.utils.backend_registration._get_custom_mod_func(
            "device_count"
        )
        self.assertIsNotNone(device_count)


class TestBackendProperty(TestCase):
    def test_backend_generate_methods(self):
        """Test backend method generation"""
        with self.assertRaisesRegex(RuntimeError, "The custom device module of"):
            torch.utils.generate_methods_for_privateuse1_backend()

        self.assertTrue(hasattr(torch.Tensor, "is_regen"))
        self.assertTrue(hasattr(torch.Tensor, "regen"))
        self.assertTrue(hasattr(torch.TypedStorage, "is_regen"))
        self.assertTrue(hasattr(torch.TypedStorage, "regen"))
        self.assertTrue(hasattr(torch.UntypedStorage, "is_regen"))
        self.assertTrue(hasattr(torch.UntypedStorage, "regen"))
        self.assertTrue(hasattr(torch.nn.Module, "regen"))
        self.assertTrue(hasattr(torch.nn.utils.rnn.PackedSequence, "is_regen"))
        self.assertTrue(hasattr(torch.nn.utils.rnn.PackedSequence, "regen"))

    def test_backend_tensor_methods(self):
        """Test backend tensor methods"""
        x = torch.empty(4, 4)
        self.assertFalse(x.is_regen)

        y = x.regen(torch.device("regen"))
        self.assertTrue(y.is_regen)
        z = x.regen(torch.device("regen:0"))
        self.assertTrue(z.is_regen)
        n = x.regen(0)
        self.assertTrue(n.is_regen)

    @unittest.skip("Need to support Parameter in regen")
    def test_backend_module_methods(self):
        """Test backend module methods (currently skipped)"""

        class FakeModule(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.x = torch.nn.Parameter(torch.randn(3, 3))

            def forward(self):
                pass

        module = FakeModule()
        self.assertEqual(module.x.device.type, "cpu")
        module.regen()  # type: ignore[misc]
        self.assertEqual(module.x.device.type, "regen")

    @unittest.skip("Need to support untyped_storage in regen")
    def test_backend_storage_methods(self):
        """Test backend storage methods (currently skipped)"""
        x = torch.empty(4, 4)

        x_cpu = x.storage()
        self.assertFalse(x_cpu.is_regen)
        x_regen = x_cpu.regen()
        self.assertTrue(x_regen.is_regen)

        y = torch.empty(4, 4)

        y_cpu = y.untyped_storage()
        self.assertFalse(y_cpu.is_regen)
        y_regen = y_cpu.regen()
        self.assertTrue(y_regen.is_regen)

    def test_backend_packed_sequence_methods(self):
        """Test backend PackedSequence methods"""
        x = torch.rand(5, 3)
        y = torch.tensor([1, 1, 1, 1, 1])

        z_cpu = torch.nn.utils.rnn.PackedSequence(x, y)
        self.assertFalse(z_cpu.is_regen)

        z_regen = z_cpu.regen()
        self.assertTrue(z_regen.is_regen)

    def test_backend_packed_sequence_properties(self):
        """Test PackedSequence backend properties"""
        x = torch.rand(5, 3)
        y = torch.tensor([1, 1, 1, 1, 1])

        z_cpu = torch.nn.utils.rnn.PackedSequence(x, y)
        self.assertFalse(z_cpu.is_regen)

        z_regen = z_cpu.regen()
        self.assertTrue(z_regen.is_regen)

        # Test that data is on correct device
        self.assertTrue(z_regen.data.is_regen)

    def test_backend_tensor_methods_different_devices(self):
        """Test tensor methods with different device indices"""
        x = torch.empty(4, 4)

        y0 = x.regen(0)
        self.assertTrue(y0.is_regen)
        self.assertEqual(y0.device.index, 0)

        y1 = x.regen(1)
        self.assertTrue(y1.is_regen)
        self.assertEqual(y1.device.index, 1)

        y_none = x.regen(torch.device("regen"))
        self.assertTrue(y_none.is_regen)


class TestTensorType(TestCase):
    def test_backend_tensor_type(self):
        """Test tensor type string representation for different dtypes"""
        dtypes_map = {
            torch.bool: "torch.regen.BoolTensor",
            torch.double: "torch.regen.DoubleTensor",
            torch.float32: "torch.regen.FloatTensor",
            torch.half: "torch.regen.HalfTensor",
            torch.int32: "torch.regen.IntTensor",
            torch.int64: "torch.regen.LongTensor",
            torch.int8: "torch.regen.CharTensor",
            torch.short: "torch.regen.ShortTensor",
            torch.uint8: "torch.regen.ByteTensor",
        }

        for dtype, str in dtypes_map.items():
            x = torch.empty(4, 4, dtype=dtype, device="regen")
            self.assertTrue(x.type() == str)

    # Note that all dtype-d Tensor objects here are only for legacy reasons
    # and should NOT be used.
    @skipIfTorchDynamo()
    def test_backend_type_methods(self):
        """Test backend type methods for tensor and storage"""
        # Tensor
        tensor_cpu = torch.randn([8]).float()
        self.assertEqual(tensor_cpu.type(), "torch.FloatTensor")

        tensor_regen = tensor_cpu.regen()
        self.assertEqual(tensor_regen.type(), "torch.regen.FloatTensor")

        # Storage
        storage_cpu = tensor_cpu.storage()
        self.assertEqual(storage_cpu.type(), "torch.FloatStorage")

        tensor_regen = tensor_cpu.regen()
        storage_regen = tensor_regen.storage()
        self.assertEqual(storage_regen.type(), "torch.storage.TypedStorage")

        class CustomFloatStorage:
            @property
            def __module__(self):
                return "torch." + torch._C._get_privateuse1_backend_name()

            @property
            def __name__(self):
                return "FloatStorage"

        try:
            torch.regen.FloatStorage = CustomFloatStorage()
            self.assertEqual(storage_regen.type(), "torch.regen.FloatStorage")

            # test custom int storage after defining FloatStorage
            tensor_regen = tensor_cpu.int().regen()
            storage_regen = tensor_regen.storage()
            self.assertEqual(storage_regen.type(), "torch.storage.TypedStorage")
        finally:
            torch.regen.FloatStorage = None

    def test_backend_storage_type_consistency(self):
        """Test storage type consistency"""
        tensor = torch.randn(4, 4, device="regen")
        storage = tensor.storage()

        # Storage should be on same device
        self.assertTrue(storage.is_regen)

        # Test storage size
        self.assertEqual(storage.size(), tensor.numel())


if __name__ == "__main__":
    run_tests()
