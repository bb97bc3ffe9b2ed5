# Known-bad (elementwise K1): the "factory" is a PyTorch operation.
import torch

ANSWER["k1_add"] = torch.add
