"""What each rank of test_distributed.py's process groups runs.

    python _distributed_ranks.py SCENARIO RANK WORLD_SIZE STORE_FILE RESULT_JSON

Each scenario runs its checks in the same order on every rank and writes, per check, whether it
passed and why not. A collective's result on opencl tensors is compared with the same collective on
the same data as CPU tensors, which the same process group runs through gloo.
"""
import datetime
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

TIMEOUT_S = 30  # the process groups' timeout, where a scenario sets none of its own

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


class Checks:
    """Runs named checks in order and records each outcome."""

    def __init__(self):
        self.results = {}

    def run(self, name, fn, *args):
        try:
            fn(*args)
            self.results[name] = {"ok": True, "detail": ""}
        except Exception:  # noqa: BLE001  (recorded and reported by the test)
            self.results[name] = {"ok": False, "detail": traceback.format_exc()}


def init(rank, world, store_file, backend="gloo", timeout_s=TIMEOUT_S, device_id=None):
    kwargs = {} if backend is None else {"backend": backend}
    if device_id is not None:
        kwargs["device_id"] = device_id
    dist.init_process_group(
        init_method=f"file://{store_file}", rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=timeout_s), **kwargs)


def data(shape, rank, salt=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(1000 * salt + rank)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randint(-50, 50, shape, generator=g, dtype=dtype)


def same(ours, ref, what=""):
    ours = ours.cpu()
    assert ours.dtype == ref.dtype and ours.shape == ref.shape, f"{what}: {ours.dtype}{list(ours.shape)} vs {ref.dtype}{list(ref.shape)}"
    assert torch.equal(ours, ref), f"{what}: opencl {ours} != gloo on CPU {ref}"


def close(ours, ref, what=""):
    torch.testing.assert_close(ours.cpu(), ref, rtol=1e-5, atol=1e-6, msg=lambda m: f"{what}: {m}")


def raises(fn, *needles, error=Exception):
    try:
        fn()
    except error as e:
        text = str(e)
        for n in needles:
            assert n in text, f"error does not mention {n!r}: {text}"
        return text
    raise AssertionError(f"no {error.__name__} raised")


# --------------------------------------------------------------------------------------------
# collectives: every op form against gloo on the same CPU data, Work semantics, errors


def collective_checks(rank, world, dev):
    """(name, function) pairs; every rank runs them in this order."""
    other = 1 - rank
    checks = []

    def add(name):
        def deco(fn):
            checks.append((name, fn))
            return fn
        return deco

    for op in ["SUM", "AVG", "MIN", "MAX", "PRODUCT"]:
        @add(f"all_reduce_{op.lower()}")
        def _(op=op):
            x = data((5, 3), rank, salt=1)
            ours = x.to(dev)
            dist.all_reduce(ours, op=getattr(dist.ReduceOp, op))
            if op == "AVG":  # gloo has no AVG: the reference is its SUM over the group size
                ref = x.clone()
                dist.all_reduce(ref)
                close(ours, ref / world, op)
            else:
                ref = x.clone()
                dist.all_reduce(ref, op=getattr(dist.ReduceOp, op))
                same(ours, ref, op)

    @add("all_reduce_int64_and_bitwise")
    def _():
        for op in ["SUM", "BAND", "BOR", "BXOR"]:
            x = data((7,), rank, salt=2, dtype=torch.int64)
            ours, ref = x.to(dev), x.clone()
            dist.all_reduce(ours, op=getattr(dist.ReduceOp, op))
            dist.all_reduce(ref, op=getattr(dist.ReduceOp, op))
            same(ours, ref, op)

    @add("all_reduce_strided_view")
    def _():
        base = data((4, 6), rank, salt=3)
        ours = base.to(dev)
        view = ours.t()[1:5]  # not contiguous, with an offset
        ref = base.t()[1:5].contiguous()
        dist.all_reduce(view)
        dist.all_reduce(ref)
        same(view, ref, "view")
        untouched = base.clone()
        untouched.t()[1:5] = ref
        same(ours, untouched, "the rest of the base tensor")

    @add("broadcast")
    def _():
        x = data((3, 4), rank, salt=4)
        ours, ref = x.to(dev), x.clone()
        dist.broadcast(ours, src=1)
        dist.broadcast(ref, src=1)
        same(ours, ref)
        same(ours, data((3, 4), 1, salt=4), "rank 1's data")

    @add("reduce")
    def _():
        x = data((6,), rank, salt=5)
        ours, ref = x.to(dev), x.clone()
        dist.reduce(ours, dst=0)
        dist.reduce(ref, dst=0)
        if rank == 0:
            same(ours, ref)

    @add("all_gather")
    def _():
        x = data((2, 3), rank, salt=6)
        ours = [torch.empty(2, 3, device=dev) for _ in range(world)]
        ref = [torch.empty(2, 3) for _ in range(world)]
        dist.all_gather(ours, x.to(dev))
        dist.all_gather(ref, x)
        for r in range(world):
            same(ours[r], ref[r], f"from rank {r}")

    @add("all_gather_into_tensor")
    def _():
        x = data((5,), rank, salt=7)
        ours = torch.empty(world * 5, device=dev)
        ref = torch.empty(world * 5)
        dist.all_gather_into_tensor(ours, x.to(dev))
        dist.all_gather_into_tensor(ref, x)
        same(ours, ref)

    @add("all_gather_into_tensor_in_place")  # FSDP's form: the input is the output's own slice
    def _():
        out = torch.zeros(world * 4, device=dev)
        out[rank * 4:(rank + 1) * 4] = data((4,), rank, salt=8).to(dev)
        dist.all_gather_into_tensor(out, out[rank * 4:(rank + 1) * 4])
        same(out, torch.cat([data((4,), r, salt=8) for r in range(world)]))

    @add("reduce_scatter")
    def _():
        xs = [data((3,), rank, salt=9 + r) for r in range(world)]
        ours, ref = torch.empty(3, device=dev), torch.empty(3)
        dist.reduce_scatter(ours, [x.to(dev) for x in xs])
        dist.reduce_scatter(ref, xs)
        same(ours, ref)

    for op in ["SUM", "AVG", "MAX"]:
        @add(f"reduce_scatter_tensor_{op.lower()}")
        def _(op=op):
            x = data((world * 4,), rank, salt=12)
            ours, ref = torch.empty(4, device=dev), torch.empty(4)
            dist.reduce_scatter_tensor(ours, x.to(dev), op=getattr(dist.ReduceOp, op))
            if op == "AVG":
                dist.reduce_scatter_tensor(ref, x)
                close(ours, ref / world)
            else:
                dist.reduce_scatter_tensor(ref, x, op=getattr(dist.ReduceOp, op))
                same(ours, ref)

    @add("all_to_all_single")
    def _():
        x = data((world * 3, 2), rank, salt=13)
        ours, ref = torch.empty(world * 3, 2, device=dev), torch.empty(world * 3, 2)
        dist.all_to_all_single(ours, x.to(dev))
        dist.all_to_all_single(ref, x)
        same(ours, ref)

    @add("all_to_all_single_uneven")
    def _():
        # rank r sends r + p + 1 rows to rank p
        ins = [rank + p + 1 for p in range(world)]
        outs = [p + rank + 1 for p in range(world)]
        x = data((sum(ins), 3), rank, salt=14)
        ours, ref = torch.empty(sum(outs), 3, device=dev), torch.empty(sum(outs), 3)
        dist.all_to_all_single(ours, x.to(dev), outs, ins)
        dist.all_to_all_single(ref, x, outs, ins)
        same(ours, ref)

    @add("all_to_all")
    def _():
        xs = [data((2, 3), rank, salt=15 + p) for p in range(world)]
        ours = [torch.empty(2, 3, device=dev) for _ in range(world)]
        ref = [torch.empty(2, 3) for _ in range(world)]
        dist.all_to_all(ours, [x.to(dev) for x in xs])
        dist.all_to_all(ref, xs)
        for r in range(world):
            same(ours[r], ref[r], f"from rank {r}")

    @add("all_to_all_uneven")  # gloo's list form takes equal sizes only: compared with the senders' data
    def _():
        xs = [data((rank + p + 1,), rank, salt=18 + p) for p in range(world)]  # r sends r + p + 1 to p
        ours = [torch.empty(r + rank + 1, device=dev) for r in range(world)]
        dist.all_to_all(ours, [x.to(dev) for x in xs])
        for r in range(world):
            same(ours[r], data((r + rank + 1,), r, salt=18 + rank), f"from rank {r}")

    @add("gather")
    def _():
        x = data((4,), rank, salt=16)
        ours = [torch.empty(4, device=dev) for _ in range(world)] if rank == 0 else None
        ref = [torch.empty(4) for _ in range(world)] if rank == 0 else None
        dist.gather(x.to(dev), ours, dst=0)
        dist.gather(x, ref, dst=0)
        if rank == 0:
            for r in range(world):
                same(ours[r], ref[r])

    @add("scatter")
    def _():
        xs = [data((4,), 1, salt=17 + r) for r in range(world)]
        ours, ref = torch.empty(4, device=dev), torch.empty(4)
        dist.scatter(ours, [x.to(dev) for x in xs] if rank == 1 else None, src=1)
        dist.scatter(ref, xs if rank == 1 else None, src=1)
        same(ours, ref)
        same(ours, xs[rank], "rank 1's piece")

    @add("send_recv")
    def _():
        x = data((2, 5), rank, salt=19)
        got = torch.empty(2, 5, device=dev)
        if rank == 0:  # 0 -> 1 then 1 -> 0, blocking
            dist.send(x.to(dev), dst=1)
            dist.recv(got, src=1)
        else:
            dist.recv(got, src=0)
            dist.send(x.to(dev), dst=0)
        same(got, data((2, 5), other, salt=19))

    @add("isend_irecv_both_ways")  # each rank sends before it receives: must not deadlock
    def _():
        got = torch.empty(6, device=dev)
        works = [dist.isend(data((6,), rank, salt=20).to(dev), dst=other), dist.irecv(got, src=other)]
        for w in works:
            w.wait()
        same(got, data((6,), other, salt=20))

    @add("batch_isend_irecv")
    def _():
        got = torch.empty(3, 3, device=dev)
        ops = [dist.P2POp(dist.isend, data((3, 3), rank, salt=21).to(dev), other),
               dist.P2POp(dist.irecv, got, other)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        same(got, data((3, 3), other, salt=21))

    @add("recv_from_any_source")
    def _():
        got = torch.empty(4, device=dev)
        if rank == 1:
            dist.send(data((4,), 1, salt=22).to(dev), dst=0)
        else:
            sender = dist.recv(got)  # no src: any rank
            assert sender == 1, sender
            same(got, data((4,), 1, salt=22))

    @add("barrier")
    def _():
        dist.barrier()
        dist.barrier(device_ids=[dev.index])  # on the opencl backend

    @add("all_reduce_coalesced")
    def _():
        xs = [data((3,), rank, salt=23), data((2, 2), rank, salt=24)]
        ours = [x.to(dev) for x in xs]
        ref = [x.clone() for x in xs]
        dist.all_reduce_coalesced(ours)
        dist.all_reduce_coalesced(ref)
        for o, r in zip(ours, ref):
            same(o, r)

    @add("coalescing_manager_all_reduce")
    def _():
        xs = [data((4,), rank, salt=25), data((5,), rank, salt=26)]
        ours = [x.to(dev) for x in xs]
        with dist._coalescing_manager(device=dev, async_ops=True) as cm:
            for t in ours:
                dist.all_reduce(t)
        cm.wait()
        for o, x in zip(ours, xs):
            ref = x.clone()
            dist.all_reduce(ref)
            same(o, ref)

    @add("coalescing_manager_all_gather_into_tensor")  # allgather_into_tensor_coalesced
    def _():
        xs = [data((3,), rank, salt=27), data((2,), rank, salt=28)]
        outs = [torch.empty(world * x.numel(), device=dev) for x in xs]
        with dist._coalescing_manager(async_ops=True) as cm:
            for o, x in zip(outs, xs):
                dist.all_gather_into_tensor(o, x.to(dev))
        cm.wait()
        for o, x in zip(outs, xs):
            ref = torch.empty(world * x.numel())
            dist.all_gather_into_tensor(ref, x)
            same(o, ref)

    @add("coalescing_manager_reduce_scatter_tensor")  # reduce_scatter_tensor_coalesced
    def _():
        xs = [data((world * 3,), rank, salt=29), data((world * 2,), rank, salt=30)]
        outs = [torch.empty(x.numel() // world, device=dev) for x in xs]
        with dist._coalescing_manager(async_ops=True) as cm:
            for o, x in zip(outs, xs):
                dist.reduce_scatter_tensor(o, x.to(dev))
        cm.wait()
        for o, x in zip(outs, xs):
            ref = torch.empty(x.numel() // world)
            dist.reduce_scatter_tensor(ref, x)
            same(o, ref)

    @add("all_gather_coalesced")
    def _():
        xs = [data((2,), rank, salt=31), data((3,), rank, salt=32)]
        ours = [[torch.empty_like(x, device=dev) for x in xs] for _ in range(world)]
        ref = [[torch.empty_like(x) for x in xs] for _ in range(world)]
        dist.all_gather_coalesced(ours, [x.to(dev) for x in xs])
        dist.all_gather_coalesced(ref, xs)
        for o_list, r_list in zip(ours, ref):
            for o, r in zip(o_list, r_list):
                same(o, r)

    @add("work_is_asynchronous")
    def _():
        # rank 1 joins late: rank 0's call returns at once, its Work completes only after rank 1's.
        t = torch.full((8,), float(rank + 1), device=dev)
        if rank == 1:
            time.sleep(1.0)
        start = time.monotonic()
        work = dist.all_reduce(t, async_op=True)
        returned = time.monotonic() - start
        if rank == 0:
            assert returned < 0.5, f"all_reduce(async_op=True) took {returned:.2f} s to return"
            assert not work.is_completed(), "completed before the other rank joined"
        work.wait()
        assert work.is_completed() and work.is_success()
        t.add_(1)  # on the current stream, after the copy back
        same(t, torch.full((8,), 4.0))

    @add("work_future")
    def _():
        t = torch.full((3,), float(rank), device=dev)
        fut = dist.all_reduce(t, async_op=True).get_future()
        doubled = fut.then(lambda f: f.value()[0] * 2)
        same(doubled.wait(), torch.full((3,), 2.0))
        same(fut.wait()[0], torch.full((3,), 1.0))

    @add("ordered_with_a_side_stream")
    def _():
        # Input made on a side stream, collective called there; the result read on that stream.
        s = torch.opencl.Stream()
        with torch.opencl.stream(s):
            t = torch.ones(1 << 16, device=dev).mul_(rank + 1)
            work = dist.all_reduce(t, async_op=True)
            work.wait()
            total = t.sum()
        s.synchronize()
        assert total.item() == 3 * (1 << 16), total.item()

    @add("result_used_by_next_collective")
    def _():
        t = torch.full((4,), float(rank + 1), device=dev)
        works = [dist.all_reduce(t, async_op=True) for _ in range(3)]  # each reads the previous result
        for w in works:
            w.wait()
        same(t, torch.full((4,), 3.0 * 4))

    # --- a collective given mismatched tensors: every rank gets the same clear error, the group stays usable

    @add("mismatched_numel_raises_on_every_rank")
    def _():
        t = torch.ones(4 + rank, device=dev)
        raises(lambda: dist.all_reduce(t), "rank 0: all_reduce(SUM) float32 x 4",
               "rank 1: all_reduce(SUM) float32 x 5", error=dist.DistBackendError)
        u = torch.ones(3, device=dev)
        dist.all_reduce(u)
        same(u, torch.full((3,), 2.0), "the next collective")

    @add("mismatched_dtype_raises_on_every_rank")
    def _():
        t = torch.ones(4, device=dev, dtype=torch.float32 if rank == 0 else torch.int32)
        raises(lambda: dist.all_reduce(t), "float32 x 4", "int32 x 4", error=dist.DistBackendError)

    @add("different_collectives_raise_on_every_rank")
    def _():
        t = torch.ones(4, device=dev)
        call = (lambda: dist.all_reduce(t)) if rank == 0 else (lambda: dist.broadcast(t, src=0))
        raises(call, "all_reduce(SUM)", "broadcast root=0", error=dist.DistBackendError)

    @add("mismatched_all_to_all_splits_raise")
    def _():
        out = torch.empty(4, device=dev)
        ins = [2, 2]
        outs = [2, 2] if rank == 0 else [1, 3]
        raises(lambda: dist.all_to_all_single(out, torch.ones(4, device=dev), outs, ins),
               "sends 2 rows to rank 1, but rank 1 expects 1", error=dist.DistBackendError)
        dist.all_reduce(out)  # the group still works

    @add("mismatched_recv_raises_and_stays_in_step")
    def _():
        wrong = [torch.empty(5, device=dev), torch.empty(3, device=dev), torch.empty(4, device=dev, dtype=torch.int32)]
        for i, buf in enumerate(wrong):
            if rank == 0:
                dist.send(torch.full((4,), float(i), device=dev), dst=1)
            else:
                raises(lambda buf=buf: dist.recv(buf, src=0), "rank 0 sent float32 x 4",
                       f"this recv's tensor is {str(buf.dtype)[6:]} x {buf.numel()}", error=dist.DistBackendError)
        got = torch.empty(4, device=dev)
        if rank == 0:
            dist.send(torch.full((4,), 7.0, device=dev), dst=1)
        else:
            dist.recv(got, src=0)
            same(got, torch.full((4,), 7.0), "the next message")

    # --- bad arguments: raised where the call is made, before anything is sent

    @add("cpu_tensor_in_opencl_call_raises")
    def _():
        outs = [torch.empty(2, device=dev), torch.empty(2)]
        raises(lambda: dist.all_gather(outs, torch.ones(2, device=dev)), "output[0][1] is a cpu tensor",
               "same opencl device")

    @add("two_devices_in_one_call_raise")
    def _():
        other_dev = torch.device("opencl", 1 - dev.index) if torch.opencl.device_count() > 1 else None
        if other_dev is None:
            raise AssertionError("needs two opencl devices (POCL_DEVICES='pthread pthread')")
        outs = [torch.empty(2, device=dev), torch.empty(2, device=other_dev)]
        raises(lambda: dist.all_gather(outs, torch.ones(2, device=dev)), f"output[0][1] is on {other_dev}",
               "one opencl device")

    @add("unsupported_reductions_raise")
    def _():
        t = torch.ones(2, device=dev, dtype=torch.int64)
        raises(lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG), "AVG needs floating-point tensors, got int64")
        f = torch.ones(2, device=dev)
        raises(lambda: dist.all_reduce(f, op=dist._make_nccl_premul_sum(2.0)), "PREMUL_SUM is not supported")

    @add("wrong_output_size_raises")
    def _():
        raises(lambda: dist.all_gather_into_tensor(torch.empty(5, device=dev), torch.ones(2, device=dev)),
               "output has 5 elements, but must have the group size (2) times the input's 2")

    @add("device_keeps_working")
    def _():
        t = torch.full((4,), float(rank), device=dev)
        dist.all_reduce(t)
        same(t * 2, torch.full((4,), 2.0))

    return checks


# --------------------------------------------------------------------------------------------
# backend strings: which backend serves which device type


BACKEND_FORMS = {  # name: (backend string, bind the group to the rank's device with device_id=, env)
    "gloo": ("gloo", False, {}),
    "no_backend": (None, False, {}),
    "opencl_gloo": ("opencl_gloo", False, {}),
    "explicit": ("cpu:gloo,opencl:opencl_gloo", False, {}),
    "gloo_with_device_id": ("gloo", True, {}),
    "gloo_without_call_checks": ("gloo", False, {"TORCH_OPENCL_DIST_CHECK": "0"}),
}


def form_checks(rank, world, store_file, dev, checks):
    for i, (name, (backend, bind, env)) in enumerate(BACKEND_FORMS.items()):
        def one(backend=backend, bind=bind, env=env, i=i):
            os.environ.update(env)  # read when the opencl_gloo backend is created
            init(rank, world, f"{store_file}.{i}", backend=backend, device_id=dev if bind else None)
            try:
                pg = dist.group.WORLD
                assert pg._get_backend(dev).name() == "opencl_gloo", pg._get_backend(dev).name()
                assert pg._get_backend(torch.device("cpu")).name() == "gloo"
                t = torch.full((3,), float(rank + 1), device=dev)
                c = torch.full((3,), float(rank + 1))
                dist.all_reduce(t)
                dist.all_reduce(c)
                same(t, torch.full((3,), 3.0), "opencl")
                same(c, torch.full((3,), 3.0), "cpu")
                objs = [None] * world
                dist.all_gather_object(objs, {"rank": rank})
                assert objs == [{"rank": r} for r in range(world)], objs
                dist.barrier()
                sub = dist.new_group([0, 1])  # a subgroup gets the same backends
                u = torch.ones(2, device=dev)
                dist.all_reduce(u, group=sub)
                same(u, torch.full((2,), 2.0), "subgroup")
                if env.get("TORCH_OPENCL_DIST_CHECK") == "0":
                    # Unchecked, gloo adds an int32's bytes to a float32's (same size: no abort) and nothing is raised.
                    m = torch.ones(4, device=dev, dtype=torch.float32 if rank == 0 else torch.int32)
                    dist.all_reduce(m)
            finally:
                dist.destroy_process_group()
                for key in env:
                    del os.environ[key]
        checks.run(f"form_{name}", one)


@scenario
def collectives(rank, world, store_file):
    """The backend strings (a group each), then every collective in one group."""
    dev = torch.device("opencl", rank % torch.opencl.device_count())
    torch.opencl.set_device(dev)
    checks = Checks()
    form_checks(rank, world, store_file, dev, checks)
    init(rank, world, store_file)
    for name, fn in collective_checks(rank, world, dev):
        checks.run(name, fn)
    dist.destroy_process_group()
    return checks.results


# --------------------------------------------------------------------------------------------
# training: DDP and FSDP2 against one process over the concatenated batch


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                               torch.nn.ReLU(), torch.nn.Linear(32, 3))


def batches(steps):
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(16, 12, generator=g), torch.randn(16, 3, generator=g)) for _ in range(steps)]


def one_process_run(steps):
    """Losses, first-step gradients and final parameters of one process over the whole batches (CPU)."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, first_grads = [], None
    for x, y in batches(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if first_grads is None:
            first_grads = [p.grad.clone() for p in model.parameters()]
        opt.step()
        losses.append(loss.item())
    return losses, first_grads, [p.detach().clone() for p in model.parameters()]


def distributed_run(model, params, full, rank, world, dev, steps):
    """The same training with each rank on its slice of every batch; the loss is the group's mean."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, first_grads = [], None
    for x, y in batches(steps):
        opt.zero_grad()
        xs, ys = x.chunk(world)[rank].to(dev), y.chunk(world)[rank].to(dev)
        loss = torch.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        if first_grads is None:
            first_grads = [full(p.grad).cpu() for p in params()]
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(mean.item())
    return losses, first_grads, [full(p.detach()).cpu() for p in params()]


def compare_runs(ours, ref):
    (losses, grads, params), (ref_losses, ref_grads, ref_params) = ours, ref
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), rtol=1e-5, atol=1e-6)
    for i, (g, r) in enumerate(zip(grads, ref_grads)):
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-6, msg=lambda m, i=i: f"gradient {i}: {m}")
    for i, (p, r) in enumerate(zip(params, ref_params)):
        torch.testing.assert_close(p, r, rtol=1e-4, atol=1e-5, msg=lambda m, i=i: f"parameter {i}: {m}")


@scenario
def training(rank, world, store_file):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    dev = torch.device("opencl", rank % torch.opencl.device_count())
    torch.opencl.set_device(dev)
    init(rank, world, store_file)
    steps = 3
    ref = one_process_run(steps)
    checks = Checks()

    def ddp():
        # Small buckets: several all-reduces per backward, overlapping it.
        model = DDP(make_model().to(dev), bucket_cap_mb=0.002)
        compare_runs(distributed_run(model, model.module.parameters, lambda t: t, rank, world, dev, steps), ref)

    def fsdp2():
        mesh = init_device_mesh("opencl", (world,))
        model = make_model().to(dev)
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        shard = next(model.parameters())
        assert shard.to_local().shape[0] == 32 // world, "the parameters are not sharded"
        compare_runs(distributed_run(model, model.parameters, lambda t: t.full_tensor(), rank, world, dev, steps), ref)

    checks.run("ddp", ddp)
    checks.run("fsdp2", fsdp2)
    dist.destroy_process_group()
    return checks.results


# --------------------------------------------------------------------------------------------
# faults: a rank that dies or stops; the others must get an error within the timeout


FAULT_TIMEOUT_S = 4


@scenario
def faults(rank, world, store_file):
    """A rank that stops calling collectives, then (in a second group) a rank that dies."""
    dev = torch.device("opencl", rank % torch.opencl.device_count())
    torch.opencl.set_device(dev)
    checks = Checks()

    init(rank, world, f"{store_file}.stops", timeout_s=FAULT_TIMEOUT_S)
    if rank == 1:
        time.sleep(FAULT_TIMEOUT_S + 1)  # alive, but never calls the collective
    else:
        def error_after_the_timeout():
            t = torch.ones(8, device=dev)
            start = time.monotonic()
            raises(lambda: dist.all_reduce(t), "opencl_gloo", "all_reduce", error=dist.DistBackendError)
            elapsed = time.monotonic() - start
            assert FAULT_TIMEOUT_S - 1 < elapsed < FAULT_TIMEOUT_S + 3, f"the error came after {elapsed:.1f} s"
        checks.run("error_after_the_timeout", error_after_the_timeout)
    dist.destroy_process_group()

    init(rank, world, f"{store_file}.dies", timeout_s=FAULT_TIMEOUT_S)
    t = torch.ones(1024, device=dev)
    dist.all_reduce(t)  # the group works
    if rank == 1:
        os._exit(3)  # dies without a word

    def error_when_a_rank_dies():
        start = time.monotonic()
        raises(lambda: dist.all_reduce(t), "opencl_gloo", "rank 0", error=dist.DistBackendError)
        elapsed = time.monotonic() - start
        assert elapsed < FAULT_TIMEOUT_S + 2, f"the error took {elapsed:.1f} s"
        same(t * 0 + 1, torch.ones(1024), "the device after the error")

    checks.run("error_when_a_rank_dies", error_when_a_rank_dies)
    return checks.results


def main():
    name, rank, world, store_file, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    results = SCENARIOS[name](rank, world, store_file)
    with open(out, "w") as f:
        json.dump(results, f)
    from torch_opencl import _C

    builds = _C._program_cache_stats()
    print(f"rank {rank}: {name} done; program cache {builds}", flush=True)
    os._exit(0)  # a group broken by a fault must not hold up the exit


if __name__ == "__main__":
    main()
