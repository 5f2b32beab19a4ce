import tawa
import tawa.language as tl


@tawa.kernel
def mixed_rows(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), C: tl.tensor_ref(tl.bf16, 2),
               K: tl.index):
    acc = tl.zeros((128, 128), tl.f32)
    small = tl.zeros((64, 128), tl.f32)
    for k in tl.range(0, K, 64):
        a = tl.load(A, (0, k), (128, 64))
        b = tl.load(B, (0, k), (128, 64))
        acc = tl.dot(a, b, acc, trans_b=True)
        a2 = tl.load(A, (128, k), (64, 64))
        small = tl.dot(a2, b, small, trans_b=True)
    tl.store(C, (0, 0), acc.to(tl.bf16))
    tl.store(C, (128, 0), small.to(tl.bf16))
