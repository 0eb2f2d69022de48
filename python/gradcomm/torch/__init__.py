"""PyTorch front end: export a training step (forward, loss, gradients,
optimizer update) to GradComm MLIR; see docs/export.md."""
