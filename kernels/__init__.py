"""kernels: TileLang kernels, PyTorch references, one harness, one runner."""
