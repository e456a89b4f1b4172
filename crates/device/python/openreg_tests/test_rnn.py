# Adapted from pytorch/pytorch test/cpp_extensions/open_registration_extension/torch_openreg/tests/test_rnn.py at 2868a43d10604208f63ce3f56f9f02ea352508e3: only the device name changed.
# Owner(s): ["module: PrivateUse1"]

import torch
import torch.nn as nn
from torch.testing._internal.common_utils import run_tests, TestCase


class TestLSTM(TestCase):
    def test_lstm_basic(self):
        input_size, hidden_size, num_layers = 10, 20, 1
        seq_len, batch_size = 5, 2

        lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        lstm_regen = lstm.to("regen")
        x = torch.randn(seq_len, batch_size, input_size, device="regen")

        output, (h_n, c_n) = lstm_regen(x)

        self.assertEqual(output.device.type, "regen")
        self.assertEqual(h_n.device.type, "regen")
        self.assertEqual(c_n.device.type, "regen")
        self.assertEqual(output.shape, torch.Size([seq_len, batch_size, hidden_size]))
        self.assertEqual(h_n.shape, torch.Size([num_layers, batch_size, hidden_size]))
        self.assertEqual(c_n.shape, torch.Size([num_layers, batch_size, hidden_size]))

    def test_lstm_multi_layer(self):
        input_size, hidden_size, num_layers = 10, 20, 3
        seq_len, batch_size = 5, 2

        lstm = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
        ).to("regen")
        x = torch.randn(seq_len, batch_size, input_size, device="regen")

        output, (h_n, c_n) = lstm(x)

        self.assertEqual(output.device.type, "regen")
        self.assertEqual(output.shape, torch.Size([seq_len, batch_size, hidden_size]))
        self.assertEqual(h_n.shape, torch.Size([num_layers, batch_size, hidden_size]))
        self.assertEqual(c_n.shape, torch.Size([num_layers, batch_size, hidden_size]))

    def test_lstm_bidirectional(self):
        input_size, hidden_size, num_layers = 10, 20, 2
        seq_len, batch_size = 5, 2
        num_directions = 2

        lstm = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            bidirectional=True,
        ).to("regen")
        x = torch.randn(seq_len, batch_size, input_size, device="regen")

        output, (h_n, c_n) = lstm(x)

        self.assertEqual(output.device.type, "regen")
        self.assertEqual(
            output.shape,
            torch.Size([seq_len, batch_size, hidden_size * num_directions]),
        )
        self.assertEqual(
            h_n.shape,
            torch.Size([num_layers * num_directions, batch_size, hidden_size]),
        )
        self.assertEqual(
            c_n.shape,
            torch.Size([num_layers * num_directions, batch_size, hidden_size]),
        )

    def test_lstm_batch_first(self):
        input_size, hidden_size = 10, 20
        seq_len, batch_size = 5, 2

        lstm = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            batch_first=True,
        ).to("regen")
        x = torch.randn(batch_size, seq_len, input_size, device="regen")

        output, (h_n, c_n) = lstm(x)

        self.assertEqual(output.device.type, "regen")
        self.assertEqual(output.shape, torch.Size([batch_size, seq_len, hidden_size]))

    def test_lstm_with_initial_hidden(self):
        input_size, hidden_size, num_layers = 10, 20, 1
        seq_len, batch_size = 5, 2

        lstm = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
        ).to("regen")
        x = torch.randn(seq_len, batch_size, input_size, device="regen")
        h0 = torch.randn(num_layers, batch_size, hidden_size, device="regen")
        c0 = torch.randn(num_layers, batch_size, hidden_size, device="regen")

        output, (h_n, c_n) = lstm(x, (h0, c0))

        self.assertEqual(output.device.type, "regen")
        self.assertEqual(h_n.device.type, "regen")
        self.assertEqual(c_n.device.type, "regen")

    def test_lstm_packed_sequence(self):
        input_size, hidden_size = 10, 20

        lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size).to("regen")

        sequences = [
            torch.randn(5, input_size),
            torch.randn(3, input_size),
            torch.randn(1, input_size),
        ]
        packed = nn.utils.rnn.pack_sequence(sequences, enforce_sorted=True)
        packed_regen = packed.to("regen")

        output_packed, (h_n, c_n) = lstm(packed_regen)

        self.assertEqual(output_packed.data.device.type, "regen")
        self.assertEqual(h_n.device.type, "regen")
        self.assertEqual(c_n.device.type, "regen")

    def test_lstm_cpu_parity(self):
        input_size, hidden_size, num_layers = 8, 16, 2
        seq_len, batch_size = 4, 3

        lstm = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            bidirectional=True,
        )

        x_cpu = torch.randn(seq_len, batch_size, input_size)
        output_cpu, (h_cpu, c_cpu) = lstm(x_cpu)

        lstm_regen = lstm.to("regen")
        x_regen = x_cpu.to("regen")
        output_regen, (h_regen, c_regen) = lstm_regen(x_regen)

        self.assertEqual(output_cpu, output_regen.cpu())
        self.assertEqual(h_cpu, h_regen.cpu())
        self.assertEqual(c_cpu, c_regen.cpu())


if __name__ == "__main__":
    run_tests()
