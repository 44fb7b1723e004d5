"""Digests of CUDA tensors on the GPU (lib/python/repro_audit/device_digest.py, the C ABI of
kernels/digest_abi): the library CMake builds loads and checks its jobs without a GPU; where no GPU
or no library is at hand the recorder digests on the host, with the host's definition, and its
trace says where; on a GPU (`[gpu]`, skipped here without one) the device digests equal the host
digests of the same bytes for every size around the 64 KiB chunk, every dtype and layout the
recorder meets, and more jobs than one launch takes. REPRO_AUDIT_TEST_DIGEST_LIBRARY names the
built library (CTest sets it when the build has CUDA)."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from repro_audit import device_digest, op_digests  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit import digest as digests  # noqa: E402

LIBRARY = os.environ.get("REPRO_AUDIT_TEST_DIGEST_LIBRARY", "")


def needs_library():
    if not LIBRARY:
        pytest.skip("this build has no CUDA backend: no device-digest library to load")


def test_the_library_loads_and_refuses_bad_jobs_without_a_gpu():
    needs_library()
    library = device_digest.DeviceDigestLibrary(LIBRARY)
    # No job: nothing launched, no CUDA call, so no driver needed.
    library.enqueue([], 0, 0, 0)
    # Overlapping output ranges, a range past the output, data missing: refused before any launch.
    for jobs, out_chunks in ([(16, 70000, 0), (32, 10, 1)], 2), ([(16, 10, 3)], 3), \
                            ([(0, 10, 0)], 1):
        with pytest.raises(device_digest.DeviceDigestError, match="out of order, overlapping"):
            library.enqueue(jobs, 8, out_chunks, 0)


def test_a_library_of_another_abi_or_none_leaves_digests_on_the_host(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device_digest.load_library(torch, None) == (
        None, "host: REPRO_AUDIT_DEVICE_DIGEST_LIBRARY is not set (repro-audit exec sets it "
              "where its build has the library)")
    missing = str(tmp_path / "missing.so")
    library, where = device_digest.load_library(torch, missing)
    assert library is None and where.startswith("host: REPRO_AUDIT_DEVICE_DIGEST_LIBRARY=" +
                                                 missing + " could not be used: ")
    libc = "libc.so.6"  # loads, but has none of the functions
    library, where = device_digest.load_library(torch, libc)
    assert library is None and "could not be used" in where
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device_digest.load_library(torch, LIBRARY) == (
        None, "host: no GPU")


def host_reference(tensor):
    """The digest from the tensor's bytes through numpy, independent of DigestBatch."""
    return digests.tensor_digest(tensor)


def test_a_host_batch_digests_as_the_host_definition():
    batch = device_digest.Digester(torch, None).batch()
    tensors = [torch.arange(n, dtype=torch.float32).reshape(-1) for n in (0, 1, 16383, 16384,
                                                                          16385, 40000)]
    tensors += [torch.arange(12, dtype=torch.int64).reshape(3, 4).t(),  # strided
                torch.ones(2, 3, dtype=torch.int32), torch.zeros(5, dtype=torch.uint8)]
    pending = [batch.add(t) for t in tensors]
    loss = batch.add_copy(torch.tensor(0.25))
    batch.collect()
    assert pending == [host_reference(t) for t in tensors]  # on the host: the digests at once
    assert loss.value.item() == 0.25


def test_a_run_on_the_cpu_says_its_digests_were_made_on_the_host(tmp_path, audit_environment):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the recorder digests on it (the [gpu] cases check that)")
    script = tmp_path / "train.py"
    script.write_text(
        "import torch, repro_audit\n"
        "model = torch.nn.Linear(3, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "rec = repro_audit.Recorder.from_env(model, opt)\n"
        "x = torch.ones(4, 3)\n"
        "for _ in range(2):\n"
        "    opt.zero_grad(); loss = model(x).sum(); loss.backward(); opt.step()\n"
        "    rec.step(batch=(x,), loss=loss)\n")
    trace = tmp_path / "run-000.trace.jsonl"
    env = audit_environment(REPRO_AUDIT_TRACE=trace,
                            REPRO_AUDIT_DEVICE_DIGEST_LIBRARY=LIBRARY or "/nonexistent.so")
    subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["environment"]["digests"] == "host: no GPU"
    steps = [json.loads(l) for l in trace.read_text().splitlines() if '"record":"step"' in l]
    assert [s["batch"] for s in steps] == [0, 1]


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="[gpu] no CUDA device here")


@gpu
def test_gpu_device_digests_equal_the_host_digests():
    needs_library()
    digester = device_digest.Digester(torch, LIBRARY)
    assert digester.on_device, digester.where
    g = torch.Generator().manual_seed(3)
    sizes = [0, 1, 3, 16383, 16384, 16385, 32768, 100003, 1 << 20]
    tensors = [torch.randn(n, generator=g) for n in sizes]
    tensors += [torch.randint(0, 1 << 30, (7, 9), generator=g, dtype=torch.int64).t(),
                torch.randint(0, 255, (70000,), generator=g, dtype=torch.uint8),
                torch.randn(64, 3, 7, 7, generator=g)[:, 1]]
    tensors += [torch.randn(1000, generator=g) for _ in range(300)]  # more than one launch
    batch = digester.batch()
    pending = [batch.add(t.cuda()) for t in tensors]
    batch.collect()
    assert device_digest.resolved(pending) == [host_reference(t) for t in tensors]


@gpu
def test_gpu_op_record_digests_and_kept_bytes_equal_the_hosts():
    needs_library()
    digester = device_digest.Digester(torch, LIBRARY)
    batch = digester.batch()
    values = [torch.randn(300, 300).cuda(), torch.randn(5, dtype=torch.float64).cuda(),
              torch.tensor([True, False]).cuda(), torch.randn(4, 4).cuda().t()]
    flat = [op_digests.flat_digest(torch, v, batch) for v in values]
    kept = [op_digests.flat_digest_and_bytes(torch, v, batch) for v in values]
    batch.collect()
    host = [op_digests.flat_digest(torch, v.cpu()) for v in values]
    assert device_digest.resolved(flat) == host == device_digest.resolved([d for d, _ in kept])
    assert [bytes(b.cpu().numpy()) for _, (_, b) in kept] == [
        op_digests.flat_digest_and_bytes(torch, v.cpu())[1][1] for v in values]
