"""A model file that imports a module beside it (small.py), as a user's
models.py importing their layers.py would (test/Export/errors.py)."""

import small


def tiny():
    return small.tiny()
