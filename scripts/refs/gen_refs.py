#!/usr/bin/python3
# -*- coding: utf-8 -*-
"""
Reference test-vector generator for several attention mechanisms: the fixtures of
spec/fixtures/refs/, which the specs of the attention families read.

    /usr/bin/python3 scripts/refs/gen_refs.py [OUTDIR]    (default OUTDIR = spec/fixtures/refs)

Needs only Debian's python3-torch (1.13, CPU).  Everything is float64.
The math is written from the specification in ../shared/ATTENTION_VARIANTS.md
(NOT copied from any upstream repository).  Each case is cross-checked
against an independent formulation (dense vs. sparse, torch module vs.
hand-written, algebraic invariants) and autograd is checked with
torch.autograd.gradcheck before anything is written.

Output, per case <name>:
    OUTDIR/<name>.json   {"meta":..., "inputs":{}, "params":{}, "outputs":{},
                          "cotangents":{}, "grads":{}}
Every tensor is stored as {"shape": [...], "dtype": ..., "data": [row-major flat list]}.
Non-finite values are written as the strings "nan", "inf", "-inf".

Gradients: for outputs o_k we draw fixed random cotangents G_k (dumped under
"cotangents") and differentiate the scalar  L = sum_k sum(G_k * o_k)
with respect to every input and parameter listed under "grads"
("grads.<name>" has the shape of <name>).  I.e. grads are VJPs with G_k.

Linear-layer convention everywhere (torch's): y = x @ W^T + b, W is
(out_features, in_features).
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

DT = torch.float64
torch.set_default_dtype(DT)
SEED = 20240607

# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------


class Rng:
    """Deterministic source of random tensors (own generator, fixed seed)."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, *shape, scale=1.0):
        return torch.randn(*shape, generator=self.g, dtype=DT) * scale

    def rand(self, *shape):
        return torch.rand(*shape, generator=self.g, dtype=DT)


def lin(x, W, b=None):
    y = x @ W.transpose(0, 1)
    return y if b is None else y + b


def make_linear(rng, P, name, fin, fout, bias=True):
    P[name + ".W"] = rng.randn(fout, fin, scale=1.0 / math.sqrt(fin))
    if bias:
        P[name + ".b"] = rng.randn(fout, scale=0.1)


def L(P, name, x):
    return lin(x, P[name + ".W"], P.get(name + ".b"))


def layer_norm(x, w, b, eps=1e-5):
    # biased variance over the last dim, eps inside the sqrt (torch.nn.LayerNorm)
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def _enc(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(v)


def tdict(t):
    t = t.detach()
    if t.dtype == torch.bool:
        return {"shape": list(t.shape), "dtype": "bool",
                "data": [int(v) for v in t.reshape(-1).tolist()]}
    if not t.is_floating_point():
        return {"shape": list(t.shape), "dtype": "int64",
                "data": [int(v) for v in t.reshape(-1).tolist()]}
    return {"shape": list(t.shape), "dtype": "float64",
            "data": [_enc(v) for v in t.reshape(-1).tolist()]}


def vjp_case(name, meta, inputs, params, fn, outdir, rng, grad_inputs=None,
             extra_outputs=None, check=True, gc_eps=1e-6, gc_atol=1e-6, gc_rtol=1e-5):
    """fn(inputs, params) -> dict of output tensors (differentiable).
       grad_inputs: names of inputs to differentiate w.r.t. (floating ones)."""
    if grad_inputs is None:
        grad_inputs = [k for k, v in inputs.items() if v.is_floating_point()]
    leaves = {}
    for k in grad_inputs:
        inputs[k] = inputs[k].detach().clone().requires_grad_(True)
        leaves["input." + k] = inputs[k]
    for k in params:
        params[k] = params[k].detach().clone().requires_grad_(True)
        leaves["param." + k] = params[k]
    outs = fn(inputs, params)
    cot = {k: rng.randn(*o.shape) for k, o in outs.items()}
    loss = sum((cot[k] * outs[k]).sum() for k in outs)
    names = list(leaves)
    gr = torch.autograd.grad(loss, [leaves[n] for n in names], allow_unused=True)
    grads = {}
    for n, g in zip(names, gr):
        if g is None:
            g = torch.zeros_like(leaves[n])
        grads[n.split(".", 1)[1]] = g
    for o in outs.values():
        assert torch.isfinite(o).all(), name + ": non-finite output"
    if check:
        # gradcheck of the whole case (float64 finite differences)
        order = names

        def f(*args):
            inp = dict(inputs)
            par = dict(params)
            for n, a in zip(order, args):
                kind, nm = n.split(".", 1)
                (inp if kind == "input" else par)[nm] = a
            o = fn(inp, par)
            return tuple(o[k] for k in sorted(o))
        ok = torch.autograd.gradcheck(f, tuple(leaves[n] for n in order), eps=gc_eps,
                                      atol=gc_atol, rtol=gc_rtol)
        assert ok, name + ": gradcheck failed"
    case = {
        "meta": meta,
        "inputs": {k: tdict(v) for k, v in inputs.items()},
        "params": {k: tdict(v) for k, v in params.items()},
        "outputs": {k: tdict(v) for k, v in outs.items()},
        "cotangents": {k: tdict(v) for k, v in cot.items()},
        "grads": {k: tdict(v) for k, v in grads.items()},
    }
    if extra_outputs:
        for k, v in extra_outputs(inputs, params).items():
            case["outputs"][k] = tdict(v)
    dump(case, name, outdir)
    return outs, grads


def dump(case, name, outdir):
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(case, f)
    print("wrote %-34s outputs=%s" % (name, ",".join(case["outputs"])))


def assert_unique_extrema(t, dims):
    """min/max gradients in DiGress' Xtoy/Etoy go to a single arg-extremum; ties
       would make the reference ambiguous, so refuse them."""
    flat = t.detach().movedim(dims, tuple(range(-len(dims), 0)))
    flat = flat.reshape(*flat.shape[:-len(dims)], -1)
    for red in (flat.min(-1, keepdim=True).values, flat.max(-1, keepdim=True).values):
        cnt = (flat == red).sum(-1)
        assert (cnt == 1).all(), "tie in min/max -> change seed"


# ----------------------------------------------------------------------------
# 1. DiGress NodeEdgeBlock / XEyTransformerLayer
# ----------------------------------------------------------------------------


def digress_masked_softmax(x, mask, dim):
    """mask: bool, broadcastable to x. Entries with mask==False -> -inf, then softmax.
       Upstream quirk: if the mask has no True entry at all, x is returned unchanged."""
    if mask.sum() == 0:
        return x
    return torch.softmax(x.masked_fill(~mask, float("-inf")), dim=dim)


def digress_node_edge_block(P, X, E, y, node_mask, n_head, return_intermediates=False):
    bs, n, dx = X.shape
    df = dx // n_head
    m = node_mask.to(DT)
    xm = m[:, :, None]                                   # (bs,n,1)
    em = m[:, :, None, None] * m[:, None, :, None]       # (bs,n,n,1)

    Q = (L(P, "q", X) * xm).reshape(bs, n, n_head, df)
    K = (L(P, "k", X) * xm).reshape(bs, n, n_head, df)
    # Y[b,i,j,h,f] = Q[b,i,h,f] * K[b,j,h,f] / sqrt(df)   (i: query/target, j: key/source)
    Y = Q[:, :, None, :, :] * K[:, None, :, :, :] / math.sqrt(df)
    E1 = (L(P, "e_mul", E) * em).reshape(bs, n, n, n_head, df)
    E2 = (L(P, "e_add", E) * em).reshape(bs, n, n, n_head, df)
    Y = Y * (E1 + 1) + E2

    # edge output: y-FiLM on the (pre-softmax) scores, then e_out, then mask
    newE = Y.reshape(bs, n, n, dx)
    ye_add = L(P, "y_e_add", y)[:, None, None, :]
    ye_mul = L(P, "y_e_mul", y)[:, None, None, :]
    newE = ye_add + (ye_mul + 1) * newE
    newE = L(P, "e_out", newE) * em

    # per-feature softmax over the source/key axis j (dim 2), masked by key node
    key_ok = node_mask.bool()[:, None, :, None, None].expand(bs, n, n, n_head, df)
    attn = digress_masked_softmax(Y, key_ok, dim=2)
    V = (L(P, "v", X) * xm).reshape(bs, n, n_head, df)
    wV = (attn * V[:, None, :, :, :]).sum(dim=2).reshape(bs, n, dx)

    yx_add = L(P, "y_x_add", y)[:, None, :]
    yx_mul = L(P, "y_x_mul", y)[:, None, :]
    newX = yx_add + (yx_mul + 1) * wV
    newX = L(P, "x_out", newX) * xm

    # global features. NOTE: statistics run over ALL n (padded) nodes, no mask;
    # std is the unbiased (n-1) estimator; concat order mean,min,max,std.
    zx = torch.cat([X.mean(1), X.min(1).values, X.max(1).values, X.std(1)], dim=-1)
    emin = E.min(dim=2).values.min(dim=1).values
    emax = E.max(dim=2).values.max(dim=1).values
    ze = torch.cat([E.mean((1, 2)), emin, emax, E.std((1, 2))], dim=-1)
    new_y = L(P, "y_y", y) + L(P, "x_y", zx) + L(P, "e_y", ze)
    new_y = L(P, "y_out2", torch.relu(L(P, "y_out1", new_y)))
    if return_intermediates:
        return newX, newE, new_y, Y, attn
    return newX, newE, new_y


def digress_block_params(rng, dx, de, dy):
    P = {}
    for nm, fi, fo in [("q", dx, dx), ("k", dx, dx), ("v", dx, dx),
                       ("e_add", de, dx), ("e_mul", de, dx),
                       ("y_e_mul", dy, dx), ("y_e_add", dy, dx),
                       ("y_x_mul", dy, dx), ("y_x_add", dy, dx),
                       ("y_y", dy, dy), ("x_y", 4 * dx, dy), ("e_y", 4 * de, dy),
                       ("x_out", dx, dx), ("e_out", dx, de),
                       ("y_out1", dy, dy), ("y_out2", dy, dy)]:
        make_linear(rng, P, nm, fi, fo)
    return P


def digress_layer_params(rng, dx, de, dy, ffx, ffe, ffy):
    P = digress_block_params(rng, dx, de, dy)
    for nm, fi, fo in [("linX1", dx, ffx), ("linX2", ffx, dx),
                       ("linE1", de, ffe), ("linE2", ffe, de),
                       ("lin_y1", dy, ffy), ("lin_y2", ffy, dy)]:
        make_linear(rng, P, nm, fi, fo)
    for nm, d in [("normX1", dx), ("normX2", dx), ("normE1", de), ("normE2", de),
                  ("norm_y1", dy), ("norm_y2", dy)]:
        P[nm + ".W"] = 1.0 + rng.randn(d, scale=0.1)   # non-trivial affine on purpose
        P[nm + ".b"] = rng.randn(d, scale=0.1)
    return P


def digress_xey_layer(P, X, E, y, node_mask, n_head, eps=1e-5):
    """Post-LN layer, dropout disabled (eval)."""
    nX, nE, ny = digress_node_edge_block(P, X, E, y, node_mask, n_head)
    X = layer_norm(X + nX, P["normX1.W"], P["normX1.b"], eps)
    E = layer_norm(E + nE, P["normE1.W"], P["normE1.b"], eps)
    y = layer_norm(y + ny, P["norm_y1.W"], P["norm_y1.b"], eps)
    X = layer_norm(X + L(P, "linX2", torch.relu(L(P, "linX1", X))), P["normX2.W"], P["normX2.b"], eps)
    E = layer_norm(E + L(P, "linE2", torch.relu(L(P, "linE1", E))), P["normE2.W"], P["normE2.b"], eps)
    y = layer_norm(y + L(P, "lin_y2", torch.relu(L(P, "lin_y1", y))), P["norm_y2.W"], P["norm_y2.b"], eps)
    return X, E, y


def digress_inputs(rng, bs, n, dx, de, dy, node_mask):
    m = node_mask.to(DT)
    X = rng.randn(bs, n, dx) * m[:, :, None]
    E = rng.randn(bs, n, n, de) * (m[:, :, None, None] * m[:, None, :, None])
    y = rng.randn(bs, dy)
    return X, E, y


def cases_digress(outdir, rng):
    bs, n, dx, de, dy, H = 2, 4, 4, 3, 3, 2
    node_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)
    X, E, y = digress_inputs(rng, bs, n, dx, de, dy, node_mask)
    assert_unique_extrema(X, (1,))
    assert_unique_extrema(E, (1, 2))
    P = digress_block_params(rng, dx, de, dy)

    # self-check: a masked query row / key column must not influence valid outputs
    nX, nE, ny, Y, attn = digress_node_edge_block(P, X, E, y, node_mask, H, True)
    assert torch.allclose(attn.sum(2), torch.ones_like(attn.sum(2)))
    assert (attn[1, :, 3] == 0).all()
    assert (nX[1, 3] == 0).all() and (nE[1, 3] == 0).all() and (nE[1, :, 3] == 0).all()

    meta = {
        "mechanism": "DiGress NodeEdgeBlock (cvignac/DiGress src/models/transformer_model.py)",
        "shapes": {"bs": bs, "n": n, "dx": dx, "de": de, "dy": dy, "n_head": H, "df": dx // H},
        "layout": "X (bs,n,dx); E (bs,n,n,de) with E[b,i,j]; y (bs,dy); node_mask (bs,n) 1=real node",
        "linear": "y = x @ W^T + b, W (out,in)",
        "notes": "inputs X,E pre-masked (padded rows/cols zero). outputs.Y_scores (bs,n,n,H,df) is "
                 "the FiLM'd pre-softmax tensor; outputs.attn its masked softmax over dim 2 (j). "
                 "Y_scores/attn are not part of the loss.",
    }

    def fn(inp, par):
        a, b, c = digress_node_edge_block(par, inp["X"], inp["E"], inp["y"], inp["node_mask"], H)
        return {"newX": a, "newE": b, "new_y": c}

    def extra(inp, par):
        _, _, _, Yv, at = digress_node_edge_block(par, inp["X"], inp["E"], inp["y"], inp["node_mask"], H, True)
        return {"Y_scores": Yv, "attn": at}

    vjp_case("digress_node_edge_block", meta,
             {"X": X, "E": E, "y": y, "node_mask": node_mask}, dict(P), fn, outdir, rng,
             grad_inputs=["X", "E", "y"], extra_outputs=extra)

    # full XEyTransformerLayer (eval: dropout off)
    ffx, ffe, ffy = 5, 4, 6
    P2 = digress_layer_params(rng, dx, de, dy, ffx, ffe, ffy)
    X2, E2, y2 = digress_inputs(rng, bs, n, dx, de, dy, node_mask)
    assert_unique_extrema(X2, (1,))
    assert_unique_extrema(E2, (1, 2))
    meta2 = dict(meta)
    meta2["mechanism"] = "DiGress XEyTransformerLayer, eval mode (dropout=identity), layer_norm_eps=1e-5"
    meta2["shapes"] = dict(meta["shapes"], dim_ffX=ffx, dim_ffE=ffe, dim_ffy=ffy)
    meta2["notes"] = ("post-LN; masked nodes are NOT re-masked after the LayerNorms, so padded "
                      "rows of X/E/y outputs are generally non-zero (they equal LN(...) of the "
                      "padded input). This is upstream behaviour.")

    def fn2(inp, par):
        a, b, c = digress_xey_layer(par, inp["X"], inp["E"], inp["y"], inp["node_mask"], H)
        return {"X": a, "E": b, "y": c}

    # LayerNorm of an all-zero padded row amplifies by 1/sqrt(eps_LN) ~ 316, so the
    # finite-difference truncation error is large there: use a smaller FD step.
    vjp_case("digress_xey_layer", meta2,
             {"X": X2, "E": E2, "y": y2, "node_mask": node_mask}, dict(P2), fn2, outdir, rng,
             grad_inputs=["X", "E", "y"], gc_eps=1e-7, gc_atol=1e-5, gc_rtol=1e-5)

    # edge case: the masked_softmax quirk (mask entirely False -> identity, no softmax)
    x = rng.randn(1, 2, 2, 1, 1)
    mask0 = torch.zeros(1, 2, 2, 1, 1, dtype=torch.bool)
    out0 = digress_masked_softmax(x, mask0, dim=2)
    maskp = torch.tensor([[1, 1], [1, 0]], dtype=torch.bool)
    Xp, Ep, yp = digress_inputs(rng, 2, 2, dx, de, dy, maskp)
    with torch.no_grad():
        # batch element 1 has only one real node; batch 2 style with 0 real nodes gives NaN:
        mask_nan = torch.tensor([[1, 1], [0, 0]], dtype=torch.bool)
        Xn, En, yn = digress_inputs(rng, 2, 2, dx, de, dy, mask_nan)
        nXn, nEn, nyn = digress_node_edge_block(P, Xn, En, yn, mask_nan, H)
    case = {
        "meta": {"mechanism": "DiGress masked_softmax edge cases (forward only)",
                 "notes": "masked_softmax_all_false: mask has no True entry anywhere -> the input is "
                          "returned unchanged (no softmax at all). empty_graph: batch element 1 has no "
                          "real node -> every attention row is all -inf -> softmax NaN -> newX[1] is "
                          "NaN (NaN*0 stays NaN). Upstream does not return this: its "
                          "assert_correctly_masked(newX, x_mask) raises AssertionError('Variables not "
                          "masked properly.'). newE/new_y of that element stay finite."},
        "inputs": {"x": tdict(x), "mask": tdict(mask0), "X": tdict(Xn), "E": tdict(En),
                   "y": tdict(yn), "node_mask": tdict(mask_nan)},
        "params": {k: tdict(v) for k, v in P.items()},
        "outputs": {"masked_softmax_all_false": tdict(out0), "newX": tdict(nXn),
                    "newE": tdict(nEn), "new_y": tdict(nyn)},
    }
    assert torch.equal(out0, x)
    assert torch.isnan(nXn[1]).all() and torch.isfinite(nXn[0]).all()
    dump(case, "digress_edge_cases", outdir)


# ----------------------------------------------------------------------------
# 2. GeometricMachineLearning.jl VolumePreservingAttention + MultiHeadAttention
# ----------------------------------------------------------------------------
# Layout used here: Z is (B, d, T): batch-major, then Julia's (d, T) matrix.
# Julia's Z[i, t, b] (1-based, column-major) == our Z[b-1, i-1, t-1].


def skew_from_vec(S, n):
    """SkewSymMatrix(S, n): strictly-lower entries stored row by row
       (A21, A31, A32, A41, A42, A43, ...), A = Lo - Lo^T."""
    rows, cols = torch.tril_indices(n, n, offset=-1)    # row-major order of the strict lower triangle
    Lo = torch.zeros(n, n, dtype=S.dtype).index_put((rows, cols), S)
    return Lo - Lo.transpose(0, 1)


def cayley(C):
    """(I - C)(I + C)^{-1}, batched over leading dims (no 1/2 factor)."""
    I = torch.eye(C.shape[-1], dtype=C.dtype).expand_as(C)
    return (I - C) @ torch.linalg.inv(I + C)


def vpa_skew(Z, S):
    d = Z.shape[1]
    A = skew_from_vec(S, d)
    C = Z.transpose(1, 2) @ A @ Z                  # (B,T,T), skew, NO scaling
    Lam = cayley(C)
    return Z @ Lam, C, Lam


def vpa_arbitrary(Z, A):
    d = Z.shape[1]
    G = Z.transpose(1, 2) @ A @ Z                  # G[b,i,j] = z_i^T A z_j
    Lo = torch.tril(G, diagonal=-1) / math.sqrt(d)  # keep i > j only, scale by sqrt(d) (system dim)
    C = Lo - Lo.transpose(1, 2)
    Lam = cayley(C)
    return Z @ Lam, C, Lam


def gml_mha(Z, PQ, PK, PV, add_connection):
    """PQ/PK/PV: (n_heads, M, Dh) stacks of the per-head (M x Dh) matrices."""
    M = Z.shape[1]
    outs = []
    for h in range(PQ.shape[0]):
        Q = PQ[h].transpose(0, 1) @ Z          # (B,Dh,T)
        K = PK[h].transpose(0, 1) @ Z
        V = PV[h].transpose(0, 1) @ Z
        S = Q.transpose(1, 2) @ K / math.sqrt(M)   # S[a,b] = q_a . k_b, scaled by sqrt(M) (NOT Dh)
        Pm = torch.softmax(S, dim=1)               # column-wise: normalise over a for every column b
        outs.append(V @ Pm)                        # output column b = sum_a v_a Pm[a,b]
    out = torch.cat(outs, dim=1)                   # vcat(head_1, head_2, ...)
    return Z + out if add_connection else out


def cases_gml(outdir, rng):
    # doc examples (as assertions): SkewSymMatrix(1:6, 4) and tensor_mat_skew_sym_assign
    A_doc = skew_from_vec(torch.arange(1.0, 7.0), 4)
    assert torch.equal(A_doc, torch.tensor([[0., -1, -2, -4], [1, 0, -3, -5],
                                            [2, 3, 0, -6], [4, 5, 6, 0]]))
    Zd = torch.tensor([[[1., 1], [0, 1], [0, 1]], [[0., 1], [1, 1], [0, 1]], [[0., 1], [0, 1], [1, 1]]])
    Gd = torch.tril(Zd.transpose(1, 2) @ torch.diag(torch.tensor([1., 2, 3])) @ Zd, -1)
    assert torch.equal(Gd, torch.tensor([[[0., 0], [1, 0]], [[0., 0], [2, 0]], [[0., 0], [3, 0]]]))

    for T in (4, 7):
        B, d = 2, 3
        Z = rng.randn(B, d, T)
        S = rng.randn(d * (d - 1) // 2)
        out, C, Lam = vpa_skew(Z, S)
        I = torch.eye(T).expand(B, T, T)
        assert torch.allclose(C, -C.transpose(1, 2), atol=1e-12)
        assert torch.allclose(Lam.transpose(1, 2) @ Lam, I, atol=1e-10)
        assert torch.allclose(torch.linalg.det(Lam), torch.ones(B), atol=1e-10)
        # commuting order gives the same matrix
        assert torch.allclose(Lam, torch.linalg.solve(torch.eye(T) + C, torch.eye(T) - C), atol=1e-10)
        meta = {"mechanism": "GeometricMachineLearning.jl VolumePreservingAttention skew_sym=true",
                "shapes": {"B": B, "dim": d, "seq_len": T, "len_S": d * (d - 1) // 2},
                "layout": "Z (B,dim,T) row-major; Julia Z[i,t,b] == Z[b-1,i-1,t-1]",
                "param": "S = SkewSymMatrix storage: strictly-lower entries row by row "
                         "(A21,A31,A32,A41,...), A = Lo - Lo^T",
                "equations": "C = Z^T A Z; Lam = (I - C)(I + C)^{-1}; out = Z Lam (no scaling)"}

        def fn(inp, par):
            return {"out": vpa_skew(inp["Z"], par["S"])[0]}

        def extra(inp, par):
            _, Cc, Ll = vpa_skew(inp["Z"], par["S"])
            return {"C": Cc, "Lambda": Ll, "A": skew_from_vec(par["S"], d)}
        vjp_case("gml_vpa_skew_T%d" % T, meta, {"Z": Z}, {"S": S}, fn, outdir, rng, extra_outputs=extra)

        Z = rng.randn(B, d, T)
        A = rng.randn(d, d)
        out, C, Lam = vpa_arbitrary(Z, A)
        assert torch.allclose(C, -C.transpose(1, 2), atol=1e-12)
        assert torch.allclose(Lam.transpose(1, 2) @ Lam, I, atol=1e-10)
        meta = {"mechanism": "GeometricMachineLearning.jl VolumePreservingAttention skew_sym=false (arbitrary)",
                "shapes": {"B": B, "dim": d, "seq_len": T},
                "layout": "Z (B,dim,T) row-major; A (dim,dim) row-major, A[l,m]",
                "equations": "G = Z^T A Z; Lo = strict_lower(G)/sqrt(dim); C = Lo - Lo^T; "
                             "Lam = (I - C)(I + C)^{-1}; out = Z Lam"}

        def fn2(inp, par):
            return {"out": vpa_arbitrary(inp["Z"], par["A"])[0]}

        def extra2(inp, par):
            _, Cc, Ll = vpa_arbitrary(inp["Z"], par["A"])
            return {"C": Cc, "Lambda": Ll}
        vjp_case("gml_vpa_arbitrary_T%d" % T, meta, {"Z": Z}, {"A": A}, fn2, outdir, rng, extra_outputs=extra2)

    # volume preservation (the upstream test's property): square Z, det(out) == det(Z)
    d = 5
    Zs = rng.randn(1, d, d)
    for o in (vpa_skew(Zs, rng.randn(d * (d - 1) // 2))[0], vpa_arbitrary(Zs, rng.randn(d, d))[0]):
        assert torch.allclose(torch.linalg.det(o), torch.linalg.det(Zs), rtol=1e-10)

    # MultiHeadAttention (Stiefel=false; forward identical for Stiefel=true)
    B, M, H, T = 2, 4, 2, 5
    Dh = M // H
    Z = rng.randn(B, M, T)
    PQ, PK, PV = (rng.randn(H, M, Dh, scale=1 / math.sqrt(M)) for _ in range(3))
    meta = {"mechanism": "GeometricMachineLearning.jl MultiHeadAttention (VectorSoftmax)",
            "shapes": {"B": B, "M": M, "n_heads": H, "Dh": Dh, "T": T},
            "layout": "Z (B,M,T); PQ/PK/PV (n_heads, M, Dh): PQ[h] is Julia ps.PQ.head_{h+1} (M x Dh)",
            "equations": "per head: Q=PQ^T Z, K=PK^T Z, V=PV^T Z (Dh x T); S = Q^T K / sqrt(M); "
                         "P = softmax over rows for each column (NNlib dims=1); O_h = V P; "
                         "out = vcat(O_1..O_H); out_add = Z + out (add_connection=true, default)"}

    def fn3(inp, par):
        o = gml_mha(inp["Z"], par["PQ"], par["PK"], par["PV"], False)
        return {"out_no_add": o, "out_add": inp["Z"] + o}
    # single-head sanity: equals standard attention with roles of PQ/PK swapped
    o1 = gml_mha(Z, PQ[:1, :, :], PK[:1], PV[:1], False)
    q_std = (PK[0].T @ Z).transpose(1, 2)
    k_std = (PQ[0].T @ Z).transpose(1, 2)
    v_std = (PV[0].T @ Z).transpose(1, 2)
    w = torch.softmax(q_std @ k_std.transpose(1, 2) / math.sqrt(M), -1)
    assert torch.allclose(o1, (w @ v_std).transpose(1, 2), atol=1e-12)
    vjp_case("gml_multihead_attention", meta, {"Z": Z}, {"PQ": PQ, "PK": PK, "PV": PV}, fn3, outdir, rng)


# ----------------------------------------------------------------------------
# 3. Standard scaled-dot-product multi-head attention (torch.nn.MultiheadAttention)
# ----------------------------------------------------------------------------


def mha_manual(q_in, k_in, v_in, W_in, b_in, W_o, b_o, H, attn_mask=None, key_padding_mask=None):
    """Sequence-first (L,N,E) like nn.MultiheadAttention(batch_first=False).
       attn_mask: (L,S) or (N*H,L,S); bool True = NOT allowed, or float = added.
       key_padding_mask: (N,S) bool True = ignore."""
    Lq, N, E = q_in.shape
    S = k_in.shape[0]
    hd = E // H
    Wq, Wk, Wv = W_in.chunk(3)
    bq, bk, bv = b_in.chunk(3)
    q = lin(q_in, Wq, bq).reshape(Lq, N, H, hd).permute(1, 2, 0, 3)   # (N,H,L,hd)
    k = lin(k_in, Wk, bk).reshape(S, N, H, hd).permute(1, 2, 0, 3)
    v = lin(v_in, Wv, bv).reshape(S, N, H, hd).permute(1, 2, 0, 3)
    bias = torch.zeros(N, H, Lq, S)
    if attn_mask is not None:
        am = attn_mask if attn_mask.dim() == 2 else attn_mask.reshape(N, H, Lq, S)
        if am.dtype == torch.bool:
            bias = bias.masked_fill(am, float("-inf"))
        else:
            bias = bias + am
    if key_padding_mask is not None:
        bias = bias.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    scores = (q / math.sqrt(hd)) @ k.transpose(-1, -2) + bias
    w = torch.softmax(scores, dim=-1)                 # (dropout on w would go here)
    o = (w @ v).permute(2, 0, 1, 3).reshape(Lq, N, E)  # head h -> features [h*hd,(h+1)*hd)
    return lin(o, W_o, b_o), w.mean(1)


def sdpa_manual(q, k, v, additive_mask=None, scale=None):
    """softmax(q k^T * scale + M) v over the last axis; q (...,L,d), k,v (...,S,d)."""
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if additive_mask is not None:
        s = s + additive_mask
    return torch.softmax(s, -1) @ v


def cases_torch_mha(outdir, rng):
    E, H, Lq, S, N = 6, 2, 4, 5, 2
    mod = torch.nn.MultiheadAttention(E, H, dtype=DT)   # batch_first=False, bias=True, dropout=0
    P = {"in_proj_weight": rng.randn(3 * E, E, scale=1 / math.sqrt(E)),
         "in_proj_bias": rng.randn(3 * E, scale=0.1),
         "out_proj.W": rng.randn(E, E, scale=1 / math.sqrt(E)),
         "out_proj.b": rng.randn(E, scale=0.1)}
    with torch.no_grad():
        mod.in_proj_weight.copy_(P["in_proj_weight"])
        mod.in_proj_bias.copy_(P["in_proj_bias"])
        mod.out_proj.weight.copy_(P["out_proj.W"])
        mod.out_proj.bias.copy_(P["out_proj.b"])
    mod.eval()
    q = rng.randn(Lq, N, E)
    k = rng.randn(S, N, E)
    v = rng.randn(S, N, E)
    # masks: bool attn_mask (True = blocked), bool key_padding_mask (True = ignore),
    # and the equivalent float additive mask.
    am_bool = torch.zeros(Lq, S, dtype=torch.bool)
    am_bool[0, 3:] = True
    am_bool[2, 0] = True
    kpm = torch.zeros(N, S, dtype=torch.bool)
    kpm[1, 4] = True
    am_float = rng.randn(Lq, S, scale=0.5).masked_fill(am_bool, float("-inf"))

    variants = {"nomask": {}, "boolmask": {"attn_mask": am_bool, "key_padding_mask": kpm},
                "floatmask": {"attn_mask": am_float}}
    for tag, kw in variants.items():
        ref_out, ref_w = mod(q, k, v, need_weights=True, **kw)
        man_out, man_w = mha_manual(q, k, v, P["in_proj_weight"], P["in_proj_bias"],
                                    P["out_proj.W"], P["out_proj.b"], H, **kw)
        assert torch.allclose(ref_out, man_out, atol=1e-12), tag
        assert torch.allclose(ref_w, man_w, atol=1e-12), tag
        meta = {"mechanism": "torch.nn.MultiheadAttention (torch %s), eval / dropout=0" % torch.__version__,
                "shapes": {"E": E, "num_heads": H, "head_dim": E // H, "L": Lq, "S": S, "N": N},
                "layout": "query (L,N,E), key/value (S,N,E) (batch_first=False); "
                          "in_proj_weight rows [W_q; W_k; W_v]; head h uses features h*hd..(h+1)*hd-1",
                "masks": "attn_mask bool: True = NOT allowed (-inf); float: added to scores. "
                         "key_padding_mask (N,S) bool: True = ignore. attn_weights = mean over heads.",
                "equations": "out = concat_h softmax((q_h/sqrt(hd)) k_h^T + M) v_h  @ W_o^T + b_o"}
        inputs = {"query": q, "key": k, "value": v}
        if "attn_mask" in kw:
            inputs["attn_mask"] = kw["attn_mask"]
        if "key_padding_mask" in kw:
            inputs["key_padding_mask"] = kw["key_padding_mask"]

        def fn(inp, par, kw=kw):
            o, w = mha_manual(inp["query"], inp["key"], inp["value"], par["in_proj_weight"],
                              par["in_proj_bias"], par["out_proj.W"], par["out_proj.b"], H,
                              attn_mask=inp.get("attn_mask"), key_padding_mask=inp.get("key_padding_mask"))
            return {"attn_output": o, "attn_weights_avg": w}
        vjp_case("torch_mha_" + tag, meta, inputs, dict(P), fn, outdir, rng,
                 grad_inputs=["query", "key", "value"])

    # torch module gradients == manual gradients (one variant)
    qq, kk, vv = (t.clone().requires_grad_(True) for t in (q, k, v))
    o_ref, _ = mod(qq, kk, vv, attn_mask=am_bool, key_padding_mask=kpm)
    g_ref = torch.autograd.grad(o_ref.sum(), (qq, kk, vv, mod.in_proj_weight))
    qq2, kk2, vv2 = (t.clone().requires_grad_(True) for t in (q, k, v))
    Wi = P["in_proj_weight"].clone().requires_grad_(True)
    o_man, _ = mha_manual(qq2, kk2, vv2, Wi, P["in_proj_bias"], P["out_proj.W"], P["out_proj.b"], H,
                          attn_mask=am_bool, key_padding_mask=kpm)
    g_man = torch.autograd.grad(o_man.sum(), (qq2, kk2, vv2, Wi))
    for a, b in zip(g_ref, g_man):
        assert torch.allclose(a, b, atol=1e-12)

    # fully masked query row: NaN in torch 1.13 (both the python and the fused fast path)
    am_full = am_bool.clone()
    am_full[1, :] = True
    with torch.no_grad():
        o_nan, w_nan = mod(q, k, v, attn_mask=am_full)
    assert torch.isnan(o_nan[1]).all() and torch.isfinite(o_nan[0]).all()
    kpm_full = torch.ones(N, S, dtype=torch.bool)
    kpm_full[0] = False
    with torch.no_grad():
        o_nan2, _ = mod(q, k, v, key_padding_mask=kpm_full)
    assert torch.isnan(o_nan2[:, 1]).all() and torch.isfinite(o_nan2[:, 0]).all()
    dump({"meta": {"mechanism": "torch.nn.MultiheadAttention fully-masked rows (forward only)",
                   "notes": "row 1 of attn_mask all True -> attn_output[1,:,:] is NaN; "
                            "batch 1 key_padding_mask all True -> attn_output[:,1,:] NaN. "
                            "torch>=2.5 F.scaled_dot_product_attention math backend returns 0 "
                            "for such rows instead (_safe_softmax); torch 1.13 has no SDPA."},
          "inputs": {"query": tdict(q), "key": tdict(k), "value": tdict(v),
                     "attn_mask": tdict(am_full), "key_padding_mask_all_true_b1": tdict(kpm_full)},
          "params": {kk_: tdict(vv_) for kk_, vv_ in P.items()},
          "outputs": {"attn_output_rowmasked": tdict(o_nan), "attn_weights_rowmasked": tdict(w_nan),
                      "attn_output_kpm_batchmasked": tdict(o_nan2)}},
         "torch_mha_fully_masked_row", outdir)

    # bare SDPA (no projections), batch x heads leading dims, additive mask given explicitly
    Bt, Ht, Lt, St, d = 2, 2, 3, 4, 5
    qs, ks, vs = rng.randn(Bt, Ht, Lt, d), rng.randn(Bt, Ht, St, d), rng.randn(Bt, Ht, St, d)
    allowed = torch.ones(Bt, Ht, Lt, St, dtype=torch.bool)
    allowed[0, 1, 2, 1:] = False
    allowed[1, 0, 0, 0] = False
    add_mask = torch.zeros(Bt, Ht, Lt, St).masked_fill(~allowed, float("-inf"))
    meta = {"mechanism": "scaled dot-product attention, softmax(q k^T / sqrt(d) + M) v",
            "shapes": {"B": Bt, "H": Ht, "L": Lt, "S": St, "d": d},
            "masks": "allowed (bool, True = may attend: F.scaled_dot_product_attention convention, "
                     "OPPOSITE of nn.MultiheadAttention); additive_mask = 0 / -inf equivalent"}

    def fn4(inp, par):
        return {"out": sdpa_manual(inp["q"], inp["k"], inp["v"], inp["additive_mask"])}
    vjp_case("sdpa_masked", meta, {"q": qs, "k": ks, "v": vs, "allowed": allowed,
                                   "additive_mask": add_mask}, {}, fn4, outdir, rng,
             grad_inputs=["q", "k", "v"])


# ----------------------------------------------------------------------------
# 4. Graph attention: GAT (PyG GATConv semantics) and graph-masked dot-product
# ----------------------------------------------------------------------------


def segment_softmax(e, index, num_nodes, eps=1e-16):
    """softmax of e (E,H) over groups given by index (E,), PyG style:
       exp(e - max_group) / (sum_group + 1e-16). Empty groups produce nothing."""
    H = e.shape[1]
    mx = torch.full((num_nodes, H), float("-inf")).scatter_reduce(
        0, index[:, None].expand(-1, H), e.detach(), reduce="amax", include_self=True)
    ex = torch.exp(e - mx[index])
    den = torch.zeros(num_nodes, H).index_add(0, index, ex) + eps
    return ex / den[index]


def gat_prepare_edges(edge_index, num_nodes, add_self_loops=True):
    src, dst = edge_index
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if add_self_loops:
        ar = torch.arange(num_nodes)
        src, dst = torch.cat([src, ar]), torch.cat([dst, ar])
    return src, dst


def gat_conv(x, edge_index, W, att_src, att_dst, bias, heads, concat, slope=0.2,
             add_self_loops=True):
    N = x.shape[0]
    C = W.shape[0] // heads
    src, dst = gat_prepare_edges(edge_index, N, add_self_loops)
    h = lin(x, W).reshape(N, heads, C)                  # shared W for source and target (no bias)
    a_s = (h * att_src).sum(-1)                         # (N,H)
    a_d = (h * att_dst).sum(-1)
    e = F.leaky_relu(a_s[src] + a_d[dst], slope)        # e_ij, edge j=src -> i=dst
    alpha = segment_softmax(e, dst, N)                  # normalised over incoming edges of i
    out = torch.zeros(N, heads, C).index_add(0, dst, alpha[:, :, None] * h[src])
    out = out.reshape(N, heads * C) if concat else out.mean(1)
    return out + bias, alpha, torch.stack([src, dst])


def gat_dense(x, adj, W, att_src, att_dst, bias, heads, concat, slope=0.2):
    """adj[i,j] = 1 if j -> i (incl. self loops). Original-GAT style dense masking."""
    N = x.shape[0]
    C = W.shape[0] // heads
    h = lin(x, W).reshape(N, heads, C).transpose(0, 1)          # (H,N,C)
    a_s = (h * att_src.reshape(heads, 1, C)).sum(-1)            # (H,N)
    a_d = (h * att_dst.reshape(heads, 1, C)).sum(-1)
    e = F.leaky_relu(a_d[:, :, None] + a_s[:, None, :], slope)   # (H,i,j)
    e = e.masked_fill(~adj.bool()[None], float("-inf"))
    out = torch.softmax(e, -1) @ h                              # (H,N,C)
    out = out.transpose(0, 1)
    out = out.reshape(N, heads * C) if concat else out.mean(1)
    return out + bias


def graph_dot_attention(x, edge_index, P, heads, C, concat=True, root_weight=True):
    """PyG TransformerConv semantics (no edge features, beta=False):
       alpha_ij = softmax_{j in N_in(i)} (q_i . k_j / sqrt(C)), out_i = sum alpha_ij v_j
       (+ W_skip x_i + b_skip). No self loops are added; a node without in-edges gets 0."""
    N = x.shape[0]
    src, dst = edge_index
    q = L(P, "lin_query", x).reshape(N, heads, C)
    k = L(P, "lin_key", x).reshape(N, heads, C)
    v = L(P, "lin_value", x).reshape(N, heads, C)
    s = (q[dst] * k[src]).sum(-1) / math.sqrt(C)
    alpha = segment_softmax(s, dst, N)
    out = torch.zeros(N, heads, C).index_add(0, dst, alpha[:, :, None] * v[src])
    out = out.reshape(N, heads * C) if concat else out.mean(1)
    if root_weight:
        out = out + L(P, "lin_skip", x)
    return out, alpha


def cases_graph(outdir, rng):
    N, Fin, C, H = 5, 4, 3, 2
    # directed edges j -> i as (src=j, dst=i); includes one explicit self loop (removed then
    # re-added by GATConv) and node 4 which has no incoming edge except its self loop.
    edge_index = torch.tensor([[0, 1, 2, 3, 1, 2, 0, 2, 4],
                               [1, 0, 1, 1, 2, 2, 3, 0, 0]])
    x = rng.randn(N, Fin)
    for concat in (True, False):
        P = {"lin.W": rng.randn(H * C, Fin, scale=1 / math.sqrt(Fin)),
             "att_src": rng.randn(1, H, C), "att_dst": rng.randn(1, H, C),
             "bias": rng.randn(H * C if concat else C, scale=0.1)}
        out, alpha, ei = gat_conv(x, edge_index, P["lin.W"], P["att_src"], P["att_dst"], P["bias"], H, concat)
        adj = torch.zeros(N, N)
        adj[ei[1], ei[0]] = 1.0
        dense = gat_dense(x, adj, P["lin.W"], P["att_src"], P["att_dst"], P["bias"], H, concat)
        assert torch.allclose(out, dense, atol=1e-12)
        meta = {"mechanism": "GAT (PyG GATConv semantics, default options), eval / dropout=0",
                "shapes": {"N": N, "in": Fin, "out_channels": C, "heads": H, "concat": concat},
                "edge_index": "(2,E): row0 = source j, row1 = target i (message j -> i). "
                              "Existing self loops removed, then one self loop per node appended "
                              "(outputs.edge_index_used is the final list; alpha is per used edge).",
                "equations": "h = x W^T (no bias), viewed (N,H,C); e_ij = LeakyReLU_0.2(att_src.h_j + "
                             "att_dst.h_i) per head; alpha_ij = exp(e_ij - max)/(sum_k exp(e_ik - max) + 1e-16) "
                             "over incoming edges of i; out_i = sum_j alpha_ij h_j; concat heads (N,H*C) or "
                             "mean over heads (N,C); + bias",
                "params": "lin.W (H*C, in); att_src/att_dst (1,H,C); bias (H*C) or (C)"}

        def fn(inp, par, concat=concat):
            o, a, _ = gat_conv(inp["x"], inp["edge_index"], par["lin.W"], par["att_src"],
                               par["att_dst"], par["bias"], H, concat)
            return {"out": o, "alpha": a}

        def extra(inp, par, concat=concat):
            return {"edge_index_used": ei}
        vjp_case("gat_conv_concat" if concat else "gat_conv_mean", meta,
                 {"x": x, "edge_index": edge_index}, P, fn, outdir, rng, grad_inputs=["x"],
                 extra_outputs=extra)

    # graph-masked dot-product attention (TransformerConv semantics). Node 4 has NO in-edge.
    edge_index2 = torch.tensor([[0, 1, 2, 3, 1, 2, 0, 2, 3],
                                [1, 0, 1, 1, 2, 2, 3, 0, 0]])
    P = {}
    for nm in ("lin_query", "lin_key", "lin_value", "lin_skip"):
        make_linear(rng, P, nm, Fin, H * C)
    out, alpha = graph_dot_attention(x, edge_index2, P, H, C)
    # node 4 receives no message -> its output is exactly lin_skip(x_4)
    assert torch.allclose(out[4], L(P, "lin_skip", x[4]), atol=0)
    # dense cross-check (rows with at least one allowed key)
    adj = torch.zeros(N, N, dtype=torch.bool)
    adj[edge_index2[1], edge_index2[0]] = True
    q = L(P, "lin_query", x).reshape(N, H, C).transpose(0, 1)
    k = L(P, "lin_key", x).reshape(N, H, C).transpose(0, 1)
    v = L(P, "lin_value", x).reshape(N, H, C).transpose(0, 1)
    dense = sdpa_manual(q, k, v, torch.zeros(N, N).masked_fill(~adj, float("-inf")))
    dense = dense.transpose(0, 1).reshape(N, H * C) + L(P, "lin_skip", x)
    assert torch.allclose(dense[:4], out[:4], atol=1e-12) and torch.isnan(dense[4]).all()
    meta = {"mechanism": "graph-masked dot-product attention (PyG TransformerConv semantics: "
                         "concat=True, beta=False, root_weight=True, no edge features)",
            "shapes": {"N": N, "in": Fin, "out_channels": C, "heads": H},
            "edge_index": "(2,E): row0 = source j, row1 = target i. No self loops are added. "
                          "Node 4 has no incoming edge: sparse aggregation gives 0 (+ skip), "
                          "whereas a dense -inf masked softmax would give NaN for that row.",
            "equations": "q=W_q x+b_q, k=W_k x+b_k, v=W_v x+b_v (N,H,C); s_ij = q_i.k_j/sqrt(C); "
                         "alpha = segment softmax over incoming edges of i (+1e-16 in denominator); "
                         "out_i = concat_h sum_j alpha_ij v_j + W_skip x_i + b_skip"}

    def fn2(inp, par):
        o, a = graph_dot_attention(inp["x"], inp["edge_index"], par, H, C)
        return {"out": o, "alpha": a}
    vjp_case("graph_dot_attention", meta, {"x": x, "edge_index": edge_index2}, P, fn2, outdir,
             rng, grad_inputs=["x"])


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "spec", "fixtures", "refs")
    os.makedirs(outdir, exist_ok=True)
    rng = Rng(SEED)
    print("torch", torch.__version__, "seed", SEED, "->", outdir)
    cases_digress(outdir, rng)
    cases_gml(outdir, rng)
    cases_torch_mha(outdir, rng)
    cases_graph(outdir, rng)
    print("all self-checks and gradchecks passed")


if __name__ == "__main__":
    main()
