"""Gradient accumulation against the full batch (issue 63, worked case (a)): a small token
classifier trained on padded sequences, 64 a step. `full` computes each step's loss over the whole
batch of 64: the mean over its real (unpadded) tokens. `buggy` accumulates gradients over 4
micro-batches of 16, each loss the mean over the micro-batch's own real tokens, divided by 4: the
micro-batches hold different numbers of real tokens, so this weighs a token by its micro-batch's
length, and the training differs from the full batch (the bug found in a widely used trainer in
2024). `fixed` normalises each micro-batch's summed token loss by the whole batch's real tokens:
the full batch's loss and gradients, up to the order of the sums. The loss recorded per step is
the loss the step trained on.

Usage: python3 grad_accumulation.py full|buggy|fixed   (REPRO_AUDIT_SEED seeds the model)
"""
import sys

import torch

import repro_audit

VOCAB, CLASSES, LENGTH, BATCH, MICRO, STEPS = 50, 5, 12, 64, 4, 4


class TokenClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16, padding_idx=0)
        self.hidden = torch.nn.Linear(16, 32)
        self.head = torch.nn.Linear(32, CLASSES)

    def forward(self, tokens):
        return self.head(torch.tanh(self.hidden(self.embed(tokens))))


def batches():
    """STEPS batches of padded sequences (token 0 is padding, label -100 ignored there): the
    lengths vary from 1 to LENGTH, so the micro-batches hold different numbers of real tokens."""
    data = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        tokens = torch.randint(1, VOCAB, (BATCH, LENGTH), generator=data)
        lengths = torch.randint(1, LENGTH + 1, (BATCH,), generator=data)
        padded = torch.arange(LENGTH)[None, :] >= lengths[:, None]
        tokens[padded] = 0
        labels = torch.randint(0, CLASSES, (BATCH, LENGTH), generator=data)
        labels[padded] = -100
        yield tokens, labels


def token_losses(model, tokens, labels):
    """The summed loss over the real tokens, and their number."""
    logits = model(tokens)
    total = torch.nn.functional.cross_entropy(logits.reshape(-1, CLASSES), labels.reshape(-1),
                                              ignore_index=-100, reduction="sum")
    return total, (labels != -100).sum()


def train_step(model, variant, tokens, labels):
    """Gradients of one step into model's .grad; the step's loss."""
    if variant == "full":
        total, count = token_losses(model, tokens, labels)
        loss = total / count
        loss.backward()
        return loss.detach()
    whole_count = (labels != -100).sum()
    step_loss = torch.zeros(())
    for k in range(0, BATCH, BATCH // MICRO):
        total, count = token_losses(model, tokens[k:k + BATCH // MICRO],
                                    labels[k:k + BATCH // MICRO])
        micro = total / count / MICRO if variant == "buggy" else total / whole_count
        micro.backward()
        step_loss += micro.detach()
    return step_loss


def main(variant):
    if variant not in ("full", "buggy", "fixed"):
        sys.exit("usage: grad_accumulation.py full|buggy|fixed")
    repro_audit.seed_everything()
    torch.set_num_threads(1)
    model = TokenClassifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    with repro_audit.record(model, optimizer) as rec:
        for tokens, labels in batches():
            optimizer.zero_grad()
            loss = train_step(model, variant, tokens, labels)
            optimizer.step()
            rec.step(batch=(tokens, labels), loss=loss)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
