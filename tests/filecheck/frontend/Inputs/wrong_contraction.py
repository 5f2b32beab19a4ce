import tawa
import tawa.language as tl


@tawa.kernel
def wrong(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), BLOCK_K: tl.constexpr = 64):
    a = tl.load(A, (0, 0), (128, BLOCK_K))
    b = tl.load(B, (0, 0), (256, BLOCK_K))
    tl.store(A, (0, 0), tl.dot(a, b).to(tl.bf16))
