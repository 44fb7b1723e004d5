"""torchvision's ResNet (code nobody here wrote) trained on a GPU and recorded with repro_audit:
synthetic images (a seeded generator, on the GPU before the loop), SGD with momentum and weight
decay, TF32 off. What scripts/gpu-pytorch-check audits and scripts/bench-recorder-gpu times:

    repro-audit exec --runs 3 -- python3 docs/examples/pytorch/train_resnet_gpu.py --deterministic
    repro-audit exec --runs 3 --trace-ops 0:1 --expect any -- \\
        python3 docs/examples/pytorch/train_resnet_gpu.py --benchmark

--deterministic: torch.use_deterministic_algorithms(True) (and the cuBLAS workspace it needs);
--benchmark: torch.backends.cudnn.benchmark = True, which times cuDNN's candidate engines at each
new geometry and keeps the fastest, a choice that may differ from run to run. Prints one final
line with the loss and its float32 bits.
"""
import argparse
import os
import struct


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--benchmark", action="store_true")
    args = parser.parse_args()
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts
    import torch
    import torchvision
    import repro_audit  # repro-audit

    repro_audit.seed_everything(default=0)  # repro-audit: the run's seed (the weights)
    torch.use_deterministic_algorithms(args.deterministic)
    torch.backends.cudnn.benchmark = args.benchmark
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = getattr(torchvision.models, args.model)(num_classes=10).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    data = torch.Generator().manual_seed(7)
    images = torch.randn(4 * args.batch, 3, args.size, args.size, generator=data).cuda()
    labels = torch.randint(0, 10, (4 * args.batch,), generator=data).cuda()
    with repro_audit.record(model, optimizer) as rec:  # repro-audit
        for step in range(args.steps):
            at = (step * args.batch) % images.shape[0]
            x, y = images[at:at + args.batch], labels[at:at + args.batch]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            rec.step(batch=(x, y), loss=loss)  # repro-audit
    value = loss.item()
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    print("final loss=%.8f loss_bits=0x%08x" % (value, bits))


if __name__ == "__main__":
    main()
