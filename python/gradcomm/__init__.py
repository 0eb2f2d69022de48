"""GradComm's Python side: the PyTorch exporter (gradcomm.torch) and the MLIR
text builder it writes with (gradcomm.mlir)."""
