"""Small models for the exporter's lit tests (factories for
gradcomm-export MODULE:FACTORY)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from gradcomm.torch.export import StepSpec


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.out = nn.Linear(3, 2)

    def forward(self, x):
        return self.out(F.relu(self.fc(x)))


def tiny():
    torch.manual_seed(0)
    return StepSpec(Tiny(), (4,))


class ConvPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(2)

    def forward(self, x):
        return F.max_pool2d(self.bn(self.conv(x)), 2).flatten(1)


def conv_pool():
    torch.manual_seed(0)
    return StepSpec(ConvPool(), (1, 8, 8))


class Cumulative(nn.Module):
    """Uses an op without a converter (cumsum) inside module 'body'."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 2))

    def forward(self, x):
        return torch.cumsum(self.body(x), dim=1)


def cumulative():
    return StepSpec(Cumulative(), (4,))


class Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 2)
        self.spare = nn.Linear(4, 2)

    def forward(self, x):
        return self.used(x)


def unused():
    return StepSpec(Unused(), (4,))


def not_a_spec():
    return 42


def tiny_double():
    """Tiny in float64: refused with the types the exporter takes."""
    spec = tiny()
    spec.model.double()
    return spec


class Branchy(nn.Module):
    """A branch on a value: the step differs by input."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.gate = Gate()

    def forward(self, x):
        return self.gate(self.fc(x))


class Gate(nn.Module):
    def forward(self, h):
        if h.sum() > 0:  # the data-dependent branch
            return h
        return -h


def branchy():
    torch.manual_seed(0)
    return StepSpec(Branchy(), input_shape=(4,))


class Normalized(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        h = self.fc(x)
        return h / h.abs().sum().item()  # a value read as a Python number


def itemized():
    torch.manual_seed(0)
    return StepSpec(Normalized(), input_shape=(4,))
