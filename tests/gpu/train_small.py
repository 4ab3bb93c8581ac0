# train_small.py — a few steps of a small PyTorch MLP for scripts/gpu-check.sh, announcing each
# step on $EMO_STEP_SOCKET (EMO's step protocol) and marking it with an NVTX range "emo.step".
import os, socket, sys
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if "EMO_STEP_SOCKET" in os.environ else None
model = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 4096)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(2048, 4096, device="cuda")
for step in range(steps):
    if sock:
        sock.sendto(b"step", os.environ["EMO_STEP_SOCKET"])
    torch.cuda.nvtx.range_push("emo.step")
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    loss.item()
    torch.cuda.nvtx.range_pop()
print(f"train_small: {steps} steps, loss {loss.item():.4f}")
