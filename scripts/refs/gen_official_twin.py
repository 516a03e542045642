"""The project's own float64 twin of the official GraphMERT forward (GraphMertForMaskedLM of
jha-lab/graphmert_umls @ 5a86858c, graphmert_model/modeling_graphmert.py), written from that file
for a tiny config without importing it, and the checkpoint folder + reference case it writes:
  /usr/bin/python3 scripts/refs/gen_official_twin.py   (from the repository root)
writes spec/fixtures/official_twin/{config.json, model.safetensors, case.json} in the layout the
official code writes (spec/fixtures/official/README.md): official names, F32 weights, no tied
lm_head.decoder.*, λ under "_exp_mask_base"; case.json carries the same fields as the official
cases, so spec/official_parity_spec.lua runs the same checks on it.

The case: 3 sequences of 7 roots × 3 leaves, 4 relations; a head over three roots, relation 2 on
two roots of one sequence and one of another, tail groups with empty (padding) leaf slots, a
sequence without triples, masked root spans (one inside a head) with their SBO pairs and a
padding pair slot, a masked tail group, and a real root whose input is [PAD] (the official
collator's random replacement can draw it: padding_idx keeps its lookup gradient out). The
token embedding's [PAD] row is not zero, as in a trained checkpoint (the tied decoder updates it).

Before writing, the twin is run on the official code's own folders and cases
(spec/fixtures/official/seed1 and seed2, made by the unmodified official code) and must give their
logits, SBO logits, last hidden states, losses and gradients to 1e-9: the twin is checked against
the real thing.

Line numbers (M:…) cite modeling_graphmert.py.
"""
import json
import math
import os

import torch
import torch.nn.functional as F

from refs_common import DT, f32, read_safetensors, write_safetensors

OUT = "spec/fixtures/official_twin"
OFFICIAL = ["spec/fixtures/official/seed1", "spec/fixtures/official/seed2"]
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
FEATURE = "graphmert.graph_encoder.graph_node_feature."
ENC = "graphmert.graph_encoder."


class Config:
    def __init__(self, vocab, hidden, heads, layers, ffn, roots, leaves, relations, exp_mask_base):
        self.vocab, self.hidden, self.heads, self.layers, self.ffn = vocab, hidden, heads, layers, ffn
        self.roots, self.leaves, self.relations, self.exp_mask_base = roots, leaves, relations, exp_mask_base
        self.nodes = roots * (1 + leaves)
        self.max_targets = leaves  # span_upper_length None → leaves per root (M:1104-1109)

    @staticmethod
    def read(path):
        c = json.load(open(path))
        return Config(c["vocab_size"], c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"],
                      c["intermediate_size"], c["root_nodes"], c["max_nodes"] // c["root_nodes"] - 1,
                      c["num_relationships"], c["_exp_mask_base"])


def spatial_pos(cfg):
    """Shortest-path hops + 1 on root_undirected + leaf_undirected + leaf_connected_undirected
    (collating_graphmert.py preprocess_arch_tensors: leaf j of root i at R + i·L + j)."""
    R, L, N = cfg.roots, cfg.leaves, cfg.nodes
    adj = [[] for _ in range(N)]

    def edge(u, v):
        adj[u].append(v)
        adj[v].append(u)
    for i in range(R - 1):
        edge(i, i + 1)
    for i in range(R):
        for j in range(L):
            edge(i, R + i * L + j)
            if j + 1 < L:
                edge(R + i * L + j, R + i * L + j + 1)
    dist = torch.zeros(N, N, dtype=DT)
    for s in range(N):  # breadth first: unit edge weights
        d, frontier = {s: 0}, [s]
        while frontier:
            nxt = []
            for u in frontier:
                for v in adj[u]:
                    if v not in d:
                        d[v] = d[u] + 1
                        nxt.append(v)
            frontier = nxt
        for t, h in d.items():
            dist[s, t] = h
    return dist + 1


def gelu(x):
    return F.gelu(x)  # exact erf form ("gelu" in ACT2FN)


def linear(p, name, x):
    return x @ p[name + ".weight"].T + p[name + ".bias"]


def layer_norm(p, name, x):
    return F.layer_norm(x, (x.shape[-1],), p[name + ".weight"], p[name + ".bias"], 1e-5)


def node_features(p, cfg, ids, rel, head_len):
    """GraphMertGraphNodeFeature.forward (M:197-290): token embeddings (padding_idx 0: no lookup
    gradient to row 0), then H-GAT on each triple's tail tokens, pairing heads, tails and
    relations by their order in the batch."""
    E = p[FEATURE + "atom_encoder.weight"]
    H, R, L = cfg.hidden, cfg.roots, cfg.leaves

    def embed(t):
        return F.embedding(t, E, padding_idx=PAD)
    x = embed(ids)
    B = ids.shape[0]
    heads = [(b, r, int(head_len[b, r])) for b in range(B) for r in range(R) if head_len[b, r] != 0]
    rels = [int(rel[b, r]) for b in range(B) for r in range(R) if rel[b, r] != 0]
    leaves = [(b, n) for b in range(B) for n in range(R * L) if ids[b, R + n] != PAD]
    # M:310-331: a group runs from a slot-0 leaf to the last non-pad leaf before the next one
    starts = [i for i, (b, n) in enumerate(leaves) if n % L == 0]
    ends = [(starts[k + 1] if k + 1 < len(starts) else len(leaves)) - 1 for k in range(len(starts))]
    tails = [(leaves[s][0], leaves[s][1], leaves[e][1] + 1 - leaves[s][1]) for s, e in zip(starts, ends)]
    assert len(heads) == len(tails) == len(rels), "heads, tails and relations must pair up"
    W = p[FEATURE + "relation_matrix_encoder.weight"]
    A = p[FEATURE + "relation_encoder.weight"]
    delta = torch.zeros_like(x)
    for (hb, hr, hl), (tb, tn, tl), k in zip(heads, tails, rels):
        Wr, ar = W[k].view(H, H), A[k]
        h = embed(ids[hb, [min(hr + j, R - 1) for j in range(hl)]])  # [m, H]; past the roots: root R-1 again (M:301)
        t = embed(ids[tb, R + tn:R + tn + tl])            # [n, H]
        wh = h @ Wr.T                                     # W_r h_j
        for i in range(tl):
            u = Wr @ t[i]                                 # W_r t_i
            inter = torch.stack([u.expand_as(wh), wh], -1).reshape(wh.shape[0], 2 * H)  # [u0, w0, u1, w1, …] (M:255-260)
            alpha = F.softmax(F.leaky_relu(inter @ ar, 0.01), 0)
            delta = delta.index_put((torch.tensor([tb]), torch.tensor([R + tn + i])), (alpha @ wh).unsqueeze(0),
                                    accumulate=True)
    return x + delta


def forward(p, cfg, batch):
    """GraphMertForMaskedLM.forward in eval mode → dict of logits, SBO logits, hidden states, losses."""
    ids, am = batch["input_nodes"], batch["attention_mask"]
    B, N, H, nh = ids.shape[0], cfg.nodes, cfg.hidden, cfg.heads
    x = node_features(p, cfg, ids, batch["leaf_relationships"], batch["head_lengths"])
    gt = p[FEATURE + "graph_token.weight"].expand(B, 1, H)
    x = torch.cat([gt, x], 1)                                          # graph token at 0 (M:287)
    # decay (M:751-766): the graph token's distance softplus(gtvd, threshold 1), 0 to itself
    gd = F.softplus(p[ENC + "graph_token_virtual_distance"], threshold=1)[0]
    sp = torch.zeros(N + 1, N + 1, dtype=DT)
    sp[1:, 1:] = spatial_pos(cfg)
    sp = sp.index_put((torch.zeros(N, dtype=torch.long), torch.arange(1, N + 1)), gd)
    sp = sp.index_put((torch.arange(1, N + 1), torch.zeros(N, dtype=torch.long)), gd)
    decay = cfg.exp_mask_base ** gelu(sp.sqrt().unsqueeze(0) - p[ENC + "sp"])   # [heads, N+1, N+1]
    valid = torch.cat([torch.ones(B, 1, dtype=torch.bool), am.bool()], 1)
    blocked = ~(valid.unsqueeze(2) & valid.unsqueeze(1))
    blocked[:, 1:, 0] = True                                           # nobody attends to the graph token (M:535)
    hidden_states = [x]
    hd = H // nh
    for i in range(cfg.layers):
        pre = ENC + f"layers.{i}."
        q = linear(p, pre + "self_attn.q_proj", x) * hd ** -0.5
        k = linear(p, pre + "self_attn.k_proj", x)
        v = linear(p, pre + "self_attn.v_proj", x)
        split = lambda t: t.view(B, N + 1, nh, hd).transpose(1, 2)     # noqa: E731
        s = split(q) @ split(k).transpose(-1, -2) * decay              # decay multiplies the scaled scores (M:517-527)
        s = s.masked_fill(blocked.unsqueeze(1), float("-inf"))
        a = torch.softmax(s, -1)
        a = torch.where(torch.isnan(a), torch.zeros_like(a), a)        # fully masked rows (M:552-554)
        o = (a @ split(v)).transpose(1, 2).reshape(B, N + 1, H)
        x = layer_norm(p, pre + "self_attn_layer_norm", x + linear(p, pre + "self_attn.out_proj", o))
        f = linear(p, pre + "fc2", gelu(linear(p, pre + "fc1", x)))
        x = layer_norm(p, pre + "final_layer_norm", x + f)
        hidden_states.append(x)
    y = layer_norm(p, "graphmert.layer_norm", gelu(linear(p, "graphmert.lm_head_transform_weight", x)))  # M:1078
    h = layer_norm(p, "lm_head.layer_norm", gelu(linear(p, "lm_head.dense", y)))
    logits = (h @ p[FEATURE + "atom_encoder.weight"].T + p["lm_head.bias"])[:, 1:]   # tied decoder (M:1152)
    mlm = F.cross_entropy(logits.reshape(-1, cfg.vocab), batch["labels"].reshape(-1), ignore_index=-100)
    # SBO (M:883-904): boundary states of the transformed sequence, +1 for the graph token
    pairs, U = batch["pairs"], cfg.max_targets
    P = pairs.shape[1]
    left = torch.gather(y, 1, (pairs[:, :, 0] + 1).unsqueeze(2).expand(B, P, H)).reshape(B * P, 1, H).expand(B * P, U, H)
    right = torch.gather(y, 1, (pairs[:, :, 1] + 1).unsqueeze(2).expand(B, P, H)).reshape(B * P, 1, H).expand(B * P, U, H)
    pos = p["lm_pair_head.position_embeddings.weight"].unsqueeze(0).expand(B * P, U, H)
    z = torch.cat([left, right, pos], -1)
    mlp = "lm_pair_head.mlp_layer_norm.mlp_layer_norm."
    z = layer_norm(p, mlp + "2", gelu(linear(p, mlp + "0", z)))
    z = layer_norm(p, mlp + "5", gelu(linear(p, mlp + "3", z)))
    sbo_logits = linear(p, "lm_pair_head.decoder", z)
    sbo = F.cross_entropy(sbo_logits.reshape(-1, cfg.vocab), batch["pair_labels"].reshape(-1), ignore_index=-100)
    return {"logits": logits, "sbo_logits": sbo_logits, "hidden_states": hidden_states,
            "mlm_loss": mlm, "sbo_loss": sbo, "loss": mlm + sbo}


def run(p, cfg, batch):
    """forward + the gradients of the total loss the spec checks."""
    for name in (FEATURE + "atom_encoder.weight", ENC + "sp", FEATURE + "relation_matrix_encoder.weight"):
        p[name].requires_grad_(True)
    out = forward(p, cfg, batch)
    out["loss"].backward()
    out["grad"] = {"atom_encoder": p[FEATURE + "atom_encoder.weight"].grad,
                   "sp": p[ENC + "sp"].grad,
                   "relation_matrix_encoder": p[FEATURE + "relation_matrix_encoder.weight"].grad}
    return out


def official_batch(o):
    """The tensors a case.json's "official" part gave the official forward."""
    t = lambda name: torch.tensor(o["inputs"][name])  # noqa: E731
    return {"input_nodes": t("input_nodes")[..., 0], "attention_mask": t("attention_mask"),
            "leaf_relationships": t("leaf_relationships"), "head_lengths": t("head_lengths"),
            "labels": t("labels")[..., 0], "pairs": t("pairs"), "pair_labels": t("pair_labels")[..., 0]}


def check_against_official(folder):
    """The twin on a folder and case of the official code must give the official outputs."""
    cfg = Config.read(os.path.join(folder, "config.json"))
    p = {k: v.to(DT) for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    o = json.load(open(os.path.join(folder, "case.json")))["official"]
    out = run(p, cfg, official_batch(o))
    worst = 0.0
    for got, want in ((out["logits"], o["logits"]), (out["sbo_logits"], o["sbo_logits"]),
                      (out["hidden_states"][-1], o["hidden_states"][-1]),
                      (out["grad"]["atom_encoder"], o["grad_total"]["atom_encoder"]),
                      (out["grad"]["sp"], o["grad_total"]["sp"]),
                      (out["grad"]["relation_matrix_encoder"], o["grad_total"]["relation_matrix_encoder"])):
        worst = max(worst, (got.detach() - torch.tensor(want, dtype=DT)).abs().max().item())
    for name in ("loss", "mlm_loss", "sbo_loss"):
        worst = max(worst, abs(out[name].item() - o[name]))
    assert worst < 1e-9, f"the twin differs from the official code's case {folder} by {worst}"
    print(f"twin = official code on {folder} (max difference {worst:.1e})")


def tiny_weights(cfg, gen):
    """Seeded weights with the official names; every parameter non-trivial, float32-exact."""
    H, V, K, F_ = cfg.hidden, cfg.vocab, cfg.relations, cfg.ffn

    def randn(*shape, std=1.0):
        return f32(torch.randn(*shape, generator=gen, dtype=DT) * std)
    p = {}

    def lin(name, fin, fout):
        p[name + ".weight"] = randn(fout, fin, std=1 / math.sqrt(fin))
        p[name + ".bias"] = randn(fout, std=0.1)

    def ln(name, n):
        p[name + ".weight"] = f32(1 + torch.randn(n, generator=gen, dtype=DT) * 0.1)
        p[name + ".bias"] = randn(n, std=0.1)
    p[FEATURE + "atom_encoder.weight"] = randn(V, H, std=0.5)          # the [PAD] row 0 is not zero
    W, A = randn(K + 1, H * H, std=1 / H), randn(K + 1, 2 * H, std=0.5)
    W[0], A[0] = 0, 0                                                   # padding_idx 0 of the relation tables
    p[FEATURE + "relation_matrix_encoder.weight"], p[FEATURE + "relation_encoder.weight"] = W, A
    p[FEATURE + "graph_token.weight"] = randn(1, H, std=0.5)
    p[ENC + "graph_token_virtual_distance"] = f32(torch.rand(1, cfg.nodes, generator=gen, dtype=DT) * 2)  # both softplus branches
    p[ENC + "sp"] = f32(1 + torch.randn(cfg.heads, 1, 1, generator=gen, dtype=DT) * 0.3)
    for i in range(cfg.layers):
        pre = ENC + f"layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            lin(pre + "self_attn." + proj, H, H)
        ln(pre + "self_attn_layer_norm", H)
        lin(pre + "fc1", H, F_)
        lin(pre + "fc2", F_, H)
        ln(pre + "final_layer_norm", H)
    lin("graphmert.lm_head_transform_weight", H, H)
    ln("graphmert.layer_norm", H)
    lin("lm_head.dense", H, H)
    ln("lm_head.layer_norm", H)
    p["lm_head.bias"] = randn(V, std=0.1)
    mlp = "lm_pair_head.mlp_layer_norm.mlp_layer_norm."
    p["lm_pair_head.position_embeddings.weight"] = randn(cfg.max_targets, H, std=0.5)
    lin(mlp + "0", 3 * H, H)
    ln(mlp + "2", H)
    lin(mlp + "3", H, H)
    ln(mlp + "5", H)
    lin("lm_pair_head.decoder", H, V)
    return p


def tiny_batch(cfg):
    """The case of the docstring, in the official collator's output form (0-based ids)."""
    R, L, N, U = cfg.roots, cfg.leaves, cfg.nodes, cfg.max_targets
    ids = torch.full((3, N), PAD, dtype=torch.long)
    roots = [[CLS, 10, 11, 12, 13, 14, SEP], [CLS, 15, 16, 17, 18, 19, SEP], [CLS, 20, 21, 22, 23, SEP, PAD]]
    for b, row in enumerate(roots):
        ids[b, :R] = torch.tensor(row)
    am = torch.zeros(3, N, dtype=torch.long)
    am[:, :R] = 1  # roots always attend (dataset_preprocessing_utils.py:110), even the [PAD] root of sequence 2
    rel = torch.zeros(3, R, dtype=torch.long)
    head_len = torch.zeros(3, R, dtype=torch.long)

    def triple(b, r, length, k, tail):
        rel[b, r], head_len[b, r] = k, length
        for j, t in enumerate(tail):
            ids[b, R + r * L + j], am[b, R + r * L + j] = t, 1
    triple(0, 1, 3, 2, [24, 25])        # head over roots 1-3, one padding leaf slot
    triple(0, 4, 1, 2, [26, 27, 28])    # relation 2 again, a full tail group
    triple(1, 2, 2, 2, [29])            # relation 2 on a third root, two padding leaf slots
    triple(1, 5, 1, 1, [24, 26])
    original = ids.clone()
    labels = torch.full((3, N), -100, dtype=torch.long)

    def mask(b, n, replace):
        labels[b, n] = original[b, n]
        ids[b, n] = replace
    spans = [[(2, 3)], [(4, 4), (1, 1)], [(2, 3)]]   # root spans (first, last), in sampling order
    mask(0, 2, MASK), mask(0, 3, 7)                   # inside the head of roots 1-3; a random replacement
    mask(1, 4, original[1, 4]), mask(1, 1, MASK)      # unchanged (the 10%), [MASK]
    mask(2, 2, PAD), mask(2, 3, MASK)                 # the random replacement drew [PAD]
    leaf = R + 4 * L                                  # the tail group of sequence 0's root 4, masked whole
    mask(0, leaf, MASK), mask(0, leaf + 1, 9), mask(0, leaf + 2, original[0, leaf + 2])
    spans[0].append((leaf, leaf + 2))                 # a leaf span: a pair slot without a pair (C:511)
    # span_mask_for_sbo (collating_graphmert.py:493-516)
    P = max(len(s) for s in spans)
    pairs = torch.full((3, P, 2), -1, dtype=torch.long)
    pair_labels = torch.full((3, P * U), -100, dtype=torch.long)
    for b, list_ in enumerate(spans):
        for i, (s, e) in enumerate(list_):
            if s > 0 and e < R:
                pairs[b, i] = torch.tensor([s - 1, e + 1])
                pair_labels[b, i * U:i * U + e + 1 - s] = labels[b, s:e + 1]
    return {"input_nodes": ids, "attention_mask": am, "leaf_relationships": rel, "head_lengths": head_len,
            "labels": labels, "pairs": pairs, "pair_labels": pair_labels}


def config_json(cfg):
    """The fields of the official to_dict() that from_pretrained reads, with their official values."""
    return {"model_type": "graphmert", "architectures": ["GraphMertForMaskedLM"], "vocab_size": cfg.vocab,
            "hidden_size": cfg.hidden, "num_hidden_layers": cfg.layers, "num_attention_heads": cfg.heads,
            "intermediate_size": cfg.ffn, "root_nodes": cfg.roots, "max_nodes": cfg.nodes,
            "num_relationships": cfg.relations, "_exp_mask_base": cfg.exp_mask_base, "dropout": 0.1,
            "attention_dropout": 0.1, "activation_dropout": 0.1, "relation_emb_dropout": 0.3, "mlm_sbo": True,
            "activation_fn": "gelu", "pre_layernorm": False, "encoder_normalize_before": False,
            "embed_scale": None, "span_upper_length": None, "tie_word_embeddings": True, "pad_token_id": PAD}


def main():
    for folder in OFFICIAL:
        check_against_official(folder)
    cfg = Config(vocab=30, hidden=12, heads=3, layers=2, ffn=24, roots=7, leaves=3, relations=4, exp_mask_base=0.7)
    gen = torch.Generator().manual_seed(17)
    p = tiny_weights(cfg, gen)
    os.makedirs(OUT, exist_ok=True)
    write_safetensors(os.path.join(OUT, "model.safetensors"), p)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(config_json(cfg), f, indent=2)
    batch = tiny_batch(cfg)
    out = run({k: v.clone() for k, v in p.items()}, cfg, batch)
    B, N = batch["input_nodes"].shape
    real = [(b, n) for b in range(B) for n in range(N) if batch["attention_mask"][b, n]]
    tl = lambda t: t.detach().tolist()  # noqa: E731
    case = {
        "_readme": "Made by scripts/refs/gen_official_twin.py (the project's float64 twin of the official forward). "
                   "Top level: ids (official + 1), valid, relation, head_length, positions (1-based flat b*N+n+1 of "
                   "the real nodes) and their logits. 'official': the official-form inputs (0-based), logits [B,N,V], "
                   "sbo_logits [B*P,U,V], hidden states [B,N+1,H] per layer, loss = mlm_loss + sbo_loss and its "
                   "gradients, as in spec/fixtures/official/*/case.json.",
        "ids": tl(batch["input_nodes"] + 1), "valid": tl(batch["attention_mask"]),
        "relation": tl(batch["leaf_relationships"]), "head_length": tl(batch["head_lengths"]),
        "positions": [b * N + n + 1 for b, n in real],
        "logits": [tl(out["logits"][b, n]) for b, n in real],
        "official": {
            "dims": {"B": B, "N": N, "R": cfg.roots, "L": cfg.leaves, "V": cfg.vocab, "H": cfg.hidden,
                     "heads": cfg.heads, "layers": cfg.layers, "K_table_rows": cfg.relations + 1,
                     "U_max_targets": cfg.max_targets},
            "inputs": {"input_nodes": tl(batch["input_nodes"].unsqueeze(-1)), "attention_mask": tl(batch["attention_mask"]),
                       "leaf_relationships": tl(batch["leaf_relationships"]), "head_lengths": tl(batch["head_lengths"]),
                       "labels": tl(batch["labels"].unsqueeze(-1)), "pairs": tl(batch["pairs"]),
                       "pair_labels": tl(batch["pair_labels"].unsqueeze(-1))},
            "hidden_states": [tl(h) for h in out["hidden_states"]],
            "logits": tl(out["logits"]), "sbo_logits": tl(out["sbo_logits"]),
            "loss": out["loss"].item(), "mlm_loss": out["mlm_loss"].item(), "sbo_loss": out["sbo_loss"].item(),
            "grad_total": {k: tl(v) for k, v in out["grad"].items()},
        },
    }
    with open(os.path.join(OUT, "case.json"), "w") as f:
        json.dump(case, f, separators=(",", ":"))
    print(f"wrote {OUT}: loss {out['loss'].item():.6f} (mlm {out['mlm_loss'].item():.6f}, sbo {out['sbo_loss'].item():.6f})")


if __name__ == "__main__":
    main()
