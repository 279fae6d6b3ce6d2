"""A tiny GAN trained the way opacus's DCGAN example (``examples/dcgan.py``) trains one, on synthetic records
(plain torch and opacus; nothing of dpfed-audit inside). The discriminator is private (``make_private``); the
generator is trained by a plain Adam only through the discriminator, on generated data: post-processing.

``train`` is that correct pattern. ``train_discriminator_stepped_plainly`` plants one bug: after each private step,
a second, plain SGD over the discriminator's parameters also steps on the real (private) batch.
"""

import torch
import torch.nn as nn
import torch.optim as optim
from opacus import PrivacyEngine
from torch.utils.data import DataLoader, TensorDataset

NZ, FEATURES, RECORDS, BATCH, EPOCHS, DELTA = 8, 16, 256, 32, 2, 1e-5
REAL_LABEL, FAKE_LABEL = 1.0, 0.0


def _dataset():
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(RECORDS, FEATURES, generator=generator) * 0.5 + 1.0)


def _train(plain_real_step=False):
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(NZ, 32), nn.ReLU(), nn.Linear(32, FEATURES))
    netD = nn.Sequential(nn.Linear(FEATURES, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))

    privacy_engine = PrivacyEngine()
    netD, optimizerD, dataloader = privacy_engine.make_private(
        module=netD,
        optimizer=optimizerD,
        data_loader=DataLoader(_dataset(), batch_size=BATCH),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    plainD = optim.SGD(netD.parameters(), lr=0.01) if plain_real_step else None

    for epoch in range(EPOCHS):
        for (real_data,) in dataloader:
            batch_size = real_data.size(0)
            # (1) Update D: the private optimizer, on the real batch and on generated data
            optimizerD.zero_grad(set_to_none=True)
            label_true = torch.full((batch_size,), REAL_LABEL)
            errD_real = criterion(netD(real_data).view(-1), label_true)
            noise = torch.randn(batch_size, NZ)
            fake = netG(noise)
            label_fake = torch.full((batch_size,), FAKE_LABEL)
            errD_fake = criterion(netD(fake.detach()).view(-1), label_fake)
            errD = errD_real + errD_fake
            errD.backward()
            optimizerD.step()
            optimizerD.zero_grad(set_to_none=True)

            if plainD is not None:  # the bug: D stepped again, by a plain optimizer, on the real batch
                plainD.zero_grad()
                criterion(netD(real_data).view(-1), label_true).backward()
                plainD.step()
                optimizerD.zero_grad(set_to_none=True)

            # (2) Update G: a plain optimizer, through D, on generated data only
            optimizerG.zero_grad()
            label_g = torch.full((batch_size,), REAL_LABEL)
            errG = criterion(netD(fake).view(-1), label_g)
            errG.backward()
            optimizerG.step()
        epsilon = privacy_engine.accountant.get_epsilon(delta=DELTA)
        print(f"epoch {epoch}: Loss_D {errD.item():.3f} Loss_G {errG.item():.3f} (epsilon = {epsilon:.2f}, "
              f"delta = {DELTA})")


def train():
    _train()


def train_discriminator_stepped_plainly():
    _train(plain_real_step=True)
