# Known-bad (elementwise K1): the factory returns a Python launcher that does the work on a
# side stream (so a timer on the current stream would see nothing).
def add_kernel(N, dtype):
    def launch(A, B, C):
        import torch

        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.add(A, B, out=C)

    return launch


ANSWER["k1_add"] = add_kernel
