"""Optimizer updates written with plain tensor ops, so make_fx traces them
into the step. They follow torch.optim.SGD and torch.optim.Adam (single
tensor, non-capturable path) operation for operation; the tests compare
them with torch.optim itself."""

import math

import torch


class SGD:
    """torch.optim.SGD(lr, momentum, weight_decay, nesterov); dampening 0.

    State per parameter: `<name>.momentum_buffer` (zeros at the start, which
    gives PyTorch's first step exactly: 0 * m + g == g)."""

    name = "sgd"

    def __init__(self, momentum=0.0, weight_decay=0.0, nesterov=False):
        if nesterov and momentum == 0:
            raise ValueError("nesterov needs momentum > 0")
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov

    def state_names(self):
        return ["momentum_buffer"] if self.momentum else []

    def initial_state(self, param):
        return [torch.zeros_like(param)] if self.momentum else []

    def update(self, param, grad, state, lr):
        d = grad
        if self.weight_decay:
            d = torch.add(d, param, alpha=self.weight_decay)
        new_state = []
        if self.momentum:
            buf = torch.add(state[0] * self.momentum, d)
            new_state = [buf]
            d = torch.add(d, buf, alpha=self.momentum) if self.nesterov \
                else buf
        return step_param(param, d, lr), new_state


class Adam:
    """torch.optim.Adam(lr, betas, eps, weight_decay), amsgrad off.

    State per parameter: `<name>.exp_avg`, `<name>.exp_avg_sq` and
    `<name>.step` (a float32 scalar, as torch.optim keeps it)."""

    name = "adam"

    def __init__(self, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.weight_decay = weight_decay

    def state_names(self):
        return ["exp_avg", "exp_avg_sq", "step"]

    def initial_state(self, param):
        return [torch.zeros_like(param), torch.zeros_like(param),
                torch.zeros((), dtype=torch.float32)]

    def update(self, param, grad, state, lr):
        exp_avg, exp_avg_sq, step = state
        step = step + 1
        if self.weight_decay:
            grad = torch.add(grad, param, alpha=self.weight_decay)
        exp_avg = torch.add(exp_avg * self.beta1, grad, alpha=1 - self.beta1)
        exp_avg_sq = torch.addcmul(exp_avg_sq * self.beta2, grad, grad,
                                   value=1 - self.beta2)
        # 1 - beta^t as -expm1(t log beta), log beta in double: float32's
        # beta = 0.999 is off by 1.3e-8, which 1 - beta^t would blow up to
        # a relative 1e-5 at t = 1 (PyTorch computes these in double).
        bias_correction1 = -torch.expm1(step * math.log(self.beta1))
        bias_correction2 = -torch.expm1(step * math.log(self.beta2))
        step_size = lr / bias_correction1
        denom = torch.sqrt(exp_avg_sq) / torch.sqrt(bias_correction2) + \
            self.eps
        new_param = param - step_size * (exp_avg / denom)
        return new_param, [exp_avg, exp_avg_sq, step]


def step_param(param, direction, lr):
    if isinstance(lr, torch.Tensor):
        return param - lr * direction
    return torch.add(param, direction, alpha=-lr)


def make(name, momentum=0.0, weight_decay=0.0, nesterov=False,
         betas=(0.9, 0.999), eps=1e-8):
    if name == "sgd":
        return SGD(momentum, weight_decay, nesterov)
    if name == "adam":
        return Adam(betas, eps, weight_decay)
    raise ValueError("unknown optimizer %r (sgd or adam)" % (name,))


def torch_optimizer(optimizer, params, lr):
    """The torch.optim optimizer the exported update must match."""
    if isinstance(optimizer, SGD):
        return torch.optim.SGD(params, lr=lr, momentum=optimizer.momentum,
                               weight_decay=optimizer.weight_decay,
                               nesterov=optimizer.nesterov)
    return torch.optim.Adam(params, lr=lr,
                            betas=(optimizer.beta1, optimizer.beta2),
                            eps=optimizer.eps,
                            weight_decay=optimizer.weight_decay)
