"""Tiny opacus set-ups whose batches are not (input, label) tensors (issues 39 item 5, 40 item 3): the same small
conv net and 8x8 images as tuples and as dicts (``{"img", "label"}``, as torch's ``default_collate`` makes of
Hugging Face / flwr-datasets rows), dict keys found through the model's ``forward`` or named by ``input_key`` /
``label_key``, variable-length sequences padded by the loader's ``collate_fn`` (as opacus's char-LSTM example
does), and batches that cannot be read. Fixed seeds: the data, the model, the sampler and the noise."""

import warnings

import torch
from opacus import PrivacyEngine
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, TensorDataset

DELTA = 1e-5
RECORDS, BATCH = 120, 20


def _images():
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(RECORDS, 1, 8, 8, generator=generator)
    y = (x.mean(dim=(1, 2, 3)) > 0).long()
    return x, y


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.out = nn.Linear(4 * 6 * 6, 2)

    def forward(self, x):
        return self.out(torch.relu(self.conv(x)).flatten(1))


class PixelNet(ConvNet):
    """The same net, its input named ``pixels`` (no usual name): found as a parameter of ``forward``."""

    def forward(self, pixels):
        return super().forward(pixels)


class Rows(Dataset):
    """Records as dicts of tensors (a Hugging Face dataset with ``set_format("torch")``)."""

    def __init__(self, columns: dict):
        self.columns = columns

    def __len__(self):
        return len(next(iter(self.columns.values())))

    def __getitem__(self, i):
        return {k: v[i] for k, v in self.columns.items()}


def _private(model, loader, **extra):
    torch.manual_seed(3)  # the Poisson sampler draws from the global generator
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0,
        noise_generator=torch.Generator().manual_seed(2))
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine, "epochs": 2,
            "delta": DELTA, **extra}


def _conv(cls=ConvNet):
    torch.manual_seed(0)
    return cls()


def tuples():
    x, y = _images()
    return _private(_conv(), DataLoader(TensorDataset(x, y), batch_size=BATCH))


def dicts():
    """The same records as ``tuples`` as ``{"img", "label"}`` dicts: the same findings."""
    x, y = _images()
    return _private(_conv(), DataLoader(Rows({"img": x, "label": y}), batch_size=BATCH))


def dicts_named_by_forward():
    """``{"pixels", "labels", "id"}``: the input found by the name of ``forward``'s parameter; ``id`` ignored."""
    x, y = _images()
    return _private(_conv(PixelNet), DataLoader(Rows({"id": torch.arange(RECORDS), "pixels": x, "labels": y}),
                                                batch_size=BATCH))


def _odd_keys():
    x, y = _images()
    return DataLoader(Rows({"a": x, "b": y}), batch_size=BATCH)


def explicit_keys():
    """Keys no rule finds, named in the set-up dict."""
    return _private(_conv(), _odd_keys(), input_key="a", label_key="b")


def unknown_keys():
    """Keys no rule finds, not named: unreadable (exit 2, one line)."""
    return _private(_conv(), _odd_keys())


def wrong_input_key():
    return _private(_conv(), _odd_keys(), input_key="image")


def key_for_tuples():
    x, y = _images()
    return _private(_conv(), DataLoader(TensorDataset(x, y), batch_size=BATCH), input_key="img")


class Box:
    """A batch object of the user's own (neither tensor, tuple, list nor dict)."""

    def __init__(self, x, y):
        self.x, self.y = x, y


def boxed(rows):
    return Box(torch.stack([x for x, _ in rows]), torch.stack([y for _, y in rows]))


def object_batches():
    x, y = _images()
    return _private(_conv(), DataLoader(TensorDataset(x, y), batch_size=BATCH, collate_fn=boxed))


# ----- variable-length sequences, padded by the loader's collate_fn (opacus's char-LSTM example) ----------------
VOCAB, PAD = 12, 0


class Names(Dataset):
    """Token sequences of 2 to 9 tokens (a name as characters) and a label each."""

    def __init__(self):
        generator = torch.Generator().manual_seed(7)
        lengths = torch.randint(2, 10, (RECORDS,), generator=generator)
        self.rows = [torch.randint(1, VOCAB, (int(n),), generator=generator) for n in lengths]
        self.labels = (lengths > 5).long()

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i], self.labels[i]


def padded_collate(batch):
    x = pad_sequence([row for row, _ in batch], batch_first=True, padding_value=PAD)
    return x, torch.stack([label for _, label in batch])


class Bag(nn.Module):
    """Mean of the tokens' embeddings, then a linear layer."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 6, padding_idx=PAD)
        self.out = nn.Linear(6, 2)

    def forward(self, tokens):
        return self.out(self.embed(tokens).mean(dim=1))


def padded_sequences():
    torch.manual_seed(0)
    return _private(Bag(), DataLoader(Names(), batch_size=BATCH, collate_fn=padded_collate))


def padded_dicts():
    """The sequences as dicts ``{"input_ids", "label"}`` padded by a collate_fn of the user's."""
    def collate(rows):
        return {"input_ids": pad_sequence([r["input_ids"] for r in rows], batch_first=True, padding_value=PAD),
                "label": torch.stack([r["label"] for r in rows])}

    names = Names()

    class Records(Dataset):
        def __len__(self):
            return len(names)

        def __getitem__(self, i):
            return {"input_ids": names.rows[i], "label": names.labels[i]}

    torch.manual_seed(0)
    return _private(Bag(), DataLoader(Records(), batch_size=BATCH, collate_fn=collate))
