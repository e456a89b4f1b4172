"""Small real models trained on the "regen" device against the same models on CPU (identical
weights and data, several optimizer steps): a CNN (conv, batch norm, max and average pooling,
dropout, log-softmax + NLL, SGD with momentum), a transformer encoder (embedding, layer norm,
attention, GELU, cross-entropy; AdamW fused and unfused), an LSTM+GRU regressor (RMSprop) and an
MLP with BCE and smooth L1 (Adagrad). Every step must run without an op falling back to CPU, and
the losses and final weights must match CPU's (rtol 1e-4, atol 1e-5)."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from devtest import make, no_cpu_copy

STEPS = 4
TOL = dict(rtol=1e-4, atol=1e-5)


def train(model, make_opt, batches, loss_fn, device):
    """Losses of `len(batches)` optimizer steps (on one batch, repeated, so the loss must fall) of `model` on `device`, and its final state."""
    model = model.to(device)
    opt = make_opt(model.parameters())
    losses = []
    for inputs, target in batches:
        opt.zero_grad()
        out = model(*[t.to(device) for t in inputs])
        loss = loss_fn(out, target.to(device))
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses), model.state_dict()


def check(model, make_opt, batches, loss_fn):
    torch.manual_seed(0)
    cpu_model = model()
    dev_model = copy.deepcopy(cpu_model)
    cpu_losses, cpu_state = train(cpu_model, make_opt, batches, loss_fn, "cpu")
    with no_cpu_copy():
        dev_losses, dev_state = train(dev_model, make_opt, batches, loss_fn, "regen")
    torch.testing.assert_close(dev_losses.cpu(), cpu_losses, **TOL)
    assert cpu_losses[-1] < cpu_losses[0], "the model should learn something"
    for key, value in cpu_state.items():
        torch.testing.assert_close(dev_state[key].cpu(), value, **TOL, msg=lambda m: f"{key}: {m}")


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 8, 3)
        self.bn2 = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(p=0.0)
        self.fc = nn.Linear(8 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return F.log_softmax(self.fc(self.drop(x.flatten(1))), dim=1)


def test_cnn_sgd_momentum():
    batches = [((make((8, 1, 16, 16), torch.float32),), torch.randint(0, 10, (8,), generator=torch.Generator().manual_seed(0)))] * STEPS
    check(CNN, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), batches, F.nll_loss)


class Encoder(nn.Module):
    def __init__(self, vocab=20, d=16, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        # Without biases: attention's key bias gets a gradient of pure rounding noise (softmax
        # ignores it), which Adam would blow up into steps of ±lr on either side.
        self.layer = nn.TransformerEncoderLayer(d, 4, 32, dropout=0.0, activation="gelu", batch_first=True, bias=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens):
        return self.head(self.norm(self.layer(self.embed(tokens))).mean(1))


@pytest.mark.parametrize("fused", [False, True])
def test_transformer_encoder_adamw(fused):
    g = torch.Generator().manual_seed(1)
    batches = [((torch.randint(0, 20, (4, 7), generator=g),), torch.randint(0, 5, (4,), generator=g))] * STEPS
    check(Encoder, lambda p: torch.optim.AdamW(p, lr=1e-2, fused=fused), batches, F.cross_entropy)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 8, batch_first=True)
        self.gru = nn.GRU(8, 6, batch_first=True)
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, h = self.gru(y)
        return self.out(h[-1]).squeeze(1)


def test_lstm_gru_regressor_rmsprop():
    batches = [((make((5, 6, 3), torch.float32),), make((5,), torch.float32, seed=100))] * STEPS
    check(Recurrent, lambda p: torch.optim.RMSprop(p, lr=1e-2), batches, F.mse_loss)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)


def bce_and_smooth_l1(out, target):
    return F.binary_cross_entropy(torch.sigmoid(out[:, 0]), target[:, 0]) + F.smooth_l1_loss(out[:, 1], target[:, 1])


def test_mlp_bce_smooth_l1_adagrad():
    g = torch.Generator().manual_seed(2)
    target = torch.stack([(torch.rand(12, generator=g) > 0.5).float(), torch.randn(12, generator=g)], 1)
    batches = [((make((12, 10), torch.float32),), target)] * STEPS
    check(MLP, lambda p: torch.optim.Adagrad(p, lr=0.1), batches, bce_and_smooth_l1)


class TiedLM(nn.Module):
    """A GPT-style language model whose output layer shares the embedding's weight (tied
    embeddings): one Parameter reached by two modules."""

    def __init__(self, vocab=40, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.block(self.embed(ids)))


def train_tied(device):
    """The losses and final weights of a tied model built on CPU, its optimizer made before
    `model.to(device)` (as CUDA users do), trained STEPS steps on `device`."""
    torch.manual_seed(0)
    model = TiedLM()
    before = list(model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    assert model.to(device) is model
    # module.to() moved each Parameter in place (`param.data = ...`): the same objects, still
    # shared, so the optimizer built before it updates the weights the model uses.
    assert [p is q for p, q in zip(model.parameters(), before)] == [True] * len(before)
    assert model.head.weight is model.embed.weight and model.embed.weight.device.type == device
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 40, (4, 12), generator=g)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        logits = model(ids[:, :-1].to(device))
        loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten().to(device))
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    return torch.stack(losses), {k: v.cpu() for k, v in model.state_dict().items()}


def test_tied_embeddings_stay_tied_through_module_to_and_train_as_on_cpu():
    cpu_losses, cpu_state = train_tied("cpu")
    with no_cpu_copy():
        dev_losses, dev_state = train_tied("regen")
    assert cpu_losses[-1] < cpu_losses[0]
    torch.testing.assert_close(dev_losses, cpu_losses, **TOL)
    for name, value in cpu_state.items():
        torch.testing.assert_close(dev_state[name], value, **TOL, msg=lambda m, name=name: f"{name}: {m}")


def test_parameters_keep_identity_both_ways_and_data_assignment_works():
    torch.manual_seed(0)
    model = TiedLM()
    params = list(model.parameters())
    model.to("regen")
    model.to("cpu")
    assert [p is q for p, q in zip(model.parameters(), params)] == [True] * len(params)
    assert model.head.weight is model.embed.weight and model.embed.weight.device.type == "cpu"
    # What module.to() asks, and `param.data = tensor` of another device, as for CUDA.
    cpu, dev = torch.ones(2), torch.ones(2, device="regen")
    assert torch._has_compatible_shallow_copy_type(cpu, dev)
    assert torch._has_compatible_shallow_copy_type(dev, cpu)
    assert torch._has_compatible_shallow_copy_type(dev, dev)
    assert not torch._has_compatible_shallow_copy_type(dev, torch.ones(2).to_sparse())
    p = nn.Parameter(torch.zeros(3))
    p.data = torch.arange(3.0, device="regen")
    assert isinstance(p, nn.Parameter) and p.device.type == "regen"
    torch.testing.assert_close(p.detach().cpu(), torch.arange(3.0))
    # Gradients move with their parameters too.
    model.embed.weight.grad = torch.ones_like(model.embed.weight)
    model.to("regen")
    assert model.embed.weight.grad.device.type == "regen" and model.head.weight.grad is model.embed.weight.grad
