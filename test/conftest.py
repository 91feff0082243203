# The suite imports torch_opencl itself: in a CUDA or ROCm build of torch, `import torch` does not
# load it (python/torch_opencl_autoload says why), and the tests must run there too.
import torch_opencl  # noqa: F401
