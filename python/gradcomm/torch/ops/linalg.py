"""Matrix products: mm, addmm, bmm, baddbmm (contractions as
linalg.generic; gradcomm-interchange-reductions orders them for speed)."""

from gradcomm.torch.ops import converter
from gradcomm.torch.ops.elementwise import add, mul


def checked_matmul(ctx, a, b, batch_rank):
    if a.rank != batch_rank + 2 or b.rank != batch_rank + 2:
        ctx.fail("expected rank-%d operands" % (batch_rank + 2))
    if a.dtype != "f32" or b.dtype != "f32":
        ctx.fail("matrix products are f32 only")
    if a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        ctx.fail("shapes %s and %s do not multiply" % (list(a.shape),
                                                       list(b.shape)))
    return ctx.b.matmul(a, b)


@converter("mm")
def mm(ctx, a, b):
    return checked_matmul(ctx, a, b, 0)


@converter("bmm")
def bmm(ctx, a, b):
    return checked_matmul(ctx, a, b, 1)


def bias_plus_product(ctx, bias, product, beta, alpha):
    if alpha != 1:
        product = mul(ctx, product, float(alpha))
    if beta == 0:
        return product
    if beta != 1:
        bias = mul(ctx, bias, float(beta))
    return add(ctx, bias, product)


@converter("addmm")
def addmm(ctx, bias, a, b, beta=1, alpha=1):
    return bias_plus_product(ctx, bias, checked_matmul(ctx, a, b, 0), beta,
                             alpha)


@converter("baddbmm")
def baddbmm(ctx, bias, a, b, beta=1, alpha=1):
    return bias_plus_product(ctx, bias, checked_matmul(ctx, a, b, 1), beta,
                             alpha)
