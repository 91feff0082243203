"""Index errors that kernels record on the device for the next wait (runtime/deferred_errors.h).

Where the kernel forms defer index checks (the GPU class: CI runs this file again under
TORCH_OPENCL_KERNEL_CLASS=gpu), cross_entropy's targets and embedding's indices are checked by one kernel
that records a bad one and nothing waits: the op returns, and the IndexError comes at the next
synchronize or copy to the host, with the op's own message. Elsewhere the op raises at the call, as CPU.
Either way the device keeps working, and nothing reads or writes outside a buffer.
"""
import pytest
import torch
import torch.nn.functional as F

from _device_helpers import assert_same_as_cpu, index_checks_deferred, launched_kernels, native_only

DEV = "opencl"
DEFERRED = index_checks_deferred()


def raised_at_call(fn):
    """Runs fn; returns the IndexError it raised at the call, or None if it returned."""
    try:
        fn()
    except IndexError as e:
        return e
    return None


def test_cross_entropy_bad_target_raises_at_the_call_or_the_next_wait():
    x, t = torch.randn(4, 5), torch.tensor([1, 2, 7, 0])
    xd = x.to(DEV)
    with native_only():
        holder = []
        at_call = raised_at_call(lambda: holder.append(F.cross_entropy(xd, t.to(DEV))))
        if DEFERRED:
            assert at_call is None
            recorded = r"Target 7 is out of bounds\. \(recorded by cross_entropy on opencl:0"
            with pytest.raises(IndexError, match=recorded):
                holder[0].item()
        else:
            assert at_call is not None and "Target 7 is out of bounds." in str(at_call)
        torch.opencl.synchronize()  # raised once: nothing left
        good = torch.tensor([1, 2, 3, 0])
        assert_same_as_cpu(F.cross_entropy(xd, good.to(DEV)), F.cross_entropy(x, good))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_backward_with_a_bad_target_raises_and_recovers(reduction):
    x = torch.randn(6, 4, requires_grad=True)
    t_bad, t_good = torch.tensor([0, 3, -5, 1, 2, 2]), torch.tensor([0, 3, 1, 1, 2, 2])
    xd = x.detach().to(DEV).requires_grad_()
    with native_only():
        with pytest.raises(IndexError, match="Target -5 is out of bounds"):
            F.nll_loss(xd, t_bad.to(DEV), reduction=reduction).sum().backward()
            torch.opencl.synchronize()
        xd.grad = None
        F.nll_loss(xd, t_good.to(DEV), reduction=reduction).sum().backward()
    F.nll_loss(x, t_good, reduction=reduction).sum().backward()
    assert_same_as_cpu(xd.grad, x.grad)


def test_nll_loss_backward_called_directly_records_a_bad_target_on_every_device():
    """The backward's targets were checked by the forward, so it does not wait for a check of its own: a
    direct call's bad target is recorded and raised at the next wait, and its gradient is not written."""
    x, go = torch.randn(3, 4), torch.tensor(1.0)
    tw = torch.tensor(3.0)
    with native_only():
        with pytest.raises(IndexError, match="Target 4 is out of bounds"):
            torch.ops.aten.nll_loss_backward(go.to(DEV), x.to(DEV), torch.tensor([0, 4, 1], device=DEV), None, 1,
                                             -100, tw.to(DEV))
            torch.opencl.synchronize()
        good = torch.tensor([0, 3, 1])
        got = torch.ops.aten.nll_loss_backward(go.to(DEV), x.to(DEV), good.to(DEV), None, 1, -100, tw.to(DEV))
    assert_same_as_cpu(got, torch.ops.aten.nll_loss_backward(go, x, good, None, 1, -100, tw))


def test_embedding_bad_index_raises_at_the_call_or_the_next_wait():
    w = torch.randn(10, 3)
    wd = w.to(DEV)
    with native_only():
        holder = []
        at_call = raised_at_call(lambda: holder.append(F.embedding(torch.tensor([[1, 12], [0, 3]], device=DEV), wd)))
        if DEFERRED:
            assert at_call is None
            with pytest.raises(IndexError, match=r"index out of range in self \(recorded by index_select"):
                torch.opencl.synchronize()
        else:
            assert at_call is not None and "index out of range in self" in str(at_call)
        torch.opencl.synchronize()
        idx = torch.tensor([[1, 9], [0, 3]])
        assert_same_as_cpu(F.embedding(idx.to(DEV), wd), F.embedding(idx, w))


def test_deferred_checks_do_not_wait_for_the_device():
    """A deferred check is one launch and no read back; a checked-at-the-call one reads back its verdict.
    cross_entropy's fused kernel checks its targets itself: no launch of its own in either class."""
    x, t = torch.randn(64, 10, device=DEV), torch.randint(0, 10, (64,), device=DEV)
    logp = F.log_softmax(x, 1)
    F.nll_loss(logp, t)
    F.cross_entropy(x, t)
    torch.opencl.synchronize()
    with launched_kernels() as names:
        F.nll_loss(logp, t)
    if DEFERRED:
        assert "record_out_of_range" in names and "first_out_of_range" not in names, names
    else:
        assert "first_out_of_range" in names and "record_out_of_range" not in names, names
    with launched_kernels() as names:
        F.cross_entropy(x, t)
    assert not {"record_out_of_range", "first_out_of_range", "first_out_of_range_spans"} & set(names), names


def test_embedding_dense_backward_bad_index_is_an_index_error_not_a_dropped_row():
    """Only a direct call brings a bad index here (CPU's kernel crashes on one): it is recorded for the next
    wait on every device, and the kernels leave rows outside the table alone."""
    grad = torch.randn(3, 4)
    with native_only():
        with pytest.raises(IndexError, match="embedding_dense_backward: index 12 is out of range for 10 rows"):
            torch.ops.aten.embedding_dense_backward(grad.to(DEV), torch.tensor([1, 12, 2], device=DEV), 10, -1, False)
            torch.opencl.synchronize()
        with pytest.raises(IndexError, match="index -1 is out of range for 10 rows"):
            torch.ops.aten.embedding_dense_backward(grad.to(DEV), torch.tensor([1, -1, 2], device=DEV), 10, 0, True)
            torch.opencl.synchronize()
        idx = torch.tensor([1, 9, 1])
        got = torch.ops.aten.embedding_dense_backward(grad.to(DEV), idx.to(DEV), 10, -1, False)
    assert_same_as_cpu(got, torch.ops.aten.embedding_dense_backward(grad, idx, 10, -1, False))


def test_an_error_recorded_on_one_stream_is_raised_by_that_stream():
    """A wait raises what was recorded on the streams it waited for: a side stream's bad index comes at its
    own synchronize (or the device's), not at the default stream's. (embedding_dense_backward records its
    check on every device.)"""
    grad, idx = torch.randn(2, 3, device=DEV), torch.tensor([0, 5], device=DEV)
    torch.opencl.synchronize()
    side = torch.opencl.Stream()
    with torch.opencl.stream(side):
        torch.ops.aten.embedding_dense_backward(grad, idx, 5, -1, False)
    torch.opencl.current_stream().synchronize()  # the default stream recorded nothing
    with pytest.raises(IndexError, match="index 5 is out of range for 5 rows"):
        side.synchronize()
    side.synchronize()
    with torch.opencl.stream(side):
        torch.ops.aten.embedding_dense_backward(grad, idx, 5, -1, False)
    with pytest.raises(IndexError, match="index 5 is out of range for 5 rows"):
        torch.opencl.synchronize()
    torch.opencl.synchronize()


def test_an_error_no_wait_raised_is_printed_at_exit():
    """A script that ends without a synchronize still hears of its bad index (on stderr, at exit)."""
    import os
    import subprocess
    import sys

    script = ("import torch, torch_opencl\n"
              "w = torch.randn(4, 2, device='opencl')\n"
              "torch.nn.functional.embedding(torch.tensor([1, 4], device='opencl'), w)\n")
    env = dict(os.environ, TORCH_OPENCL_KERNEL_CLASS="gpu")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "at exit, an error no wait had raised: IndexError: index out of range in self" in done.stderr, done.stderr


def test_two_bad_indices_before_one_wait_are_both_reported():
    # An embedding index, then an nll_loss target, both bad, queued before one wait: the first raises and
    # names the second (in the GPU class, where both are recorded); elsewhere the first raises at its call.
    weight = torch.randn(5, 3)
    idx_bad, t_bad = torch.tensor([0, 9]), torch.tensor([0, 11])
    logp = torch.randn(2, 4).log_softmax(1)
    with native_only():
        wd, ld = weight.to(DEV), logp.to(DEV)
        if DEFERRED:
            F.embedding(idx_bad.to(DEV), wd)
            F.nll_loss(ld, t_bad.to(DEV))
            with pytest.raises(IndexError) as info:
                torch.opencl.synchronize()
            message = str(info.value)
            assert message.startswith("index out of range in self (recorded by index_select"), message
            assert "Also recorded before the same wait: nll_loss" in message, message
            assert "Target 11 is out of bounds" in message, message
        else:
            with pytest.raises(IndexError):
                F.embedding(idx_bad.to(DEV), wd)
            with pytest.raises(IndexError, match="Target 11 is out of bounds"):
                F.nll_loss(ld, t_bad.to(DEV))
        torch.opencl.synchronize()  # both were raised: nothing left
        good = torch.tensor([0, 3])
        assert_same_as_cpu(F.embedding(good.to(DEV), wd), F.embedding(good, weight))
        assert_same_as_cpu(F.nll_loss(ld, good.to(DEV)), F.nll_loss(logp, good))
