"""gen_bert_fixtures.py — a BERT vocab.txt of a few hundred pieces and the ids HF's BertTokenizer
gives for test sentences, for spec/bert_tokenizer_spec.lua.

transformers is not installed here, so this is HF's BertTokenizer algorithm written out from
transformers/models/bert/tokenization_bert.py (BasicTokenizer + WordpieceTokenizer, v4.3x, NFC
step included), with Python's unicodedata as the reference for categories and NFD. Special
tokens written inside the text are not kept whole (HF's added-token trie and never_split are not
reproduced: corpus text has none). Ids in the fixture are 1-based: the line number in vocab.txt.

    python3 scripts/refs/gen_bert_fixtures.py   # writes spec/fixtures/bert/{vocab.txt,expected.json}
"""
import json
import os
import unicodedata

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "spec", "fixtures", "bert")


def is_whitespace(ch):
    if ch in " \t\n\r":
        return True
    return unicodedata.category(ch) == "Zs"


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def clean_text(text):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        out.append(" " if is_whitespace(ch) else ch)
    return "".join(out)


def tokenize_chinese_chars(text):
    return "".join(f" {ch} " if is_chinese_char(ord(ch)) else ch for ch in text)


def strip_accents(text):
    return "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")


def split_on_punc(text):
    words, start_new = [], True
    for ch in text:
        if is_punctuation(ch):
            words.append([ch])
            start_new = True
        else:
            if start_new:
                words.append([])
            start_new = False
            words[-1].append(ch)
    return ["".join(w) for w in words]


def basic_tokenize(text, lower=True):
    text = tokenize_chinese_chars(clean_text(text))
    text = unicodedata.normalize("NFC", text)
    split = []
    for token in text.strip().split():
        if lower:
            token = strip_accents(token.lower())
        split.extend(split_on_punc(token))
    return " ".join(split).strip().split()


def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    chars = list(word)
    if len(chars) > max_chars:
        return [unk]
    out, start = [], 0
    while start < len(chars):
        end, cur = len(chars), None
        while start < end:
            sub = "".join(chars[start:end])
            if start > 0:
                sub = "##" + sub
            if sub in vocab:
                cur = sub
                break
            end -= 1
        if cur is None:
            return [unk]
        out.append(cur)
        start = end
    return out


SPECIALS_AND_UNUSED = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "is", "of", "and", "in", "to", "cafe", "naive", "ur", "##um", "##qi", "token", "##izer",
         "##ization", "##s", "##ed", "##ing", "un", "##aff", "##able", "hello", "world", "insulin", "diabetes",
         "##mellitus", "mel", "##lit", "##us", "type", "patient", "##ia", "glucose", "resist", "##ance", "beta",
         "cell", "##ular", "elite", "resume", "creme", "brulee", "zurich", "sao", "paulo", "angstrom", "dont",
         "don", "##t", "it", "we", "he", "she", "they", "was", "were", "be", "dog", "##gy", "cat", "##alyst",
         "中", "国", "我", "是", "人", "日", "本", "##中", "20", "##19", "19", "##9", "ab", "##cd", "##c",
         "very", "long", "word", "##word", "H", "##ello", "W", "##orld", "Ca", "##é"]


def build_vocab():
    pieces = list(SPECIALS_AND_UNUSED)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["¿", "¡", "«", "»", "—", "–", "“", "”", "‘", "’", "…",
                                                            "、", "。", "「", "」", "！", "？", "·", "§"]
    for p in letters + punct:
        pieces.append(p)
    for p in letters:
        pieces.append("##" + p)
    for w in WORDS:
        if w not in pieces:
            pieces.append(w)
    return pieces


SENTENCES = [
    "Hello, World!",
    "The café served crème brûlée; a naïve tourist from Ürümqi ordered it.",
    "Ångström, São Paulo and Zürich — résumé, élite.",
    "Type 2 Diabetes Mellitus (T2DM) is insulin-resistance-related?!",
    "Tokenization of unaffable tokenizers: don't, we'd, it's.",
    "Beta-cell dysfunction… «glucose» “insulin” ‘resistance’ ¿qué? ¡sí!",
    "中国人是我。日本の人「中」",
    "Control\x00chars\x07here\u200bnow\ufffdend\x1fok\ttab\nnew\rline\u00a0nbsp\u3000ideo\u2028sep",
    "A word over a hundred characters: " + "ab" * 51 + " and one at exactly a hundred: " + "a" * 100 + ".",
    "Unspellable: ßtraße øre ħ € ✓ 😀 Straße",
    "Numbers 2019, 1999 and 20.19%; e-mail@example.com #tag $5 ^_^ [MASK] {x|y} ~z",
    "COMBINING: cafe\u0301 nai\u0308ve  Ca\u0327ca DOGGY cats",
    "",
    "   \t\n  ",
]
CASED = ["Hello, World!", "Café Ürümqi naïve"]


def coverage_points():
    """Code points whose basic tokenization the Lua side must reproduce exactly (its tables)."""
    blocks = [(0x0000, 0x017F), (0x0300, 0x036F), (0x2000, 0x206F), (0x3000, 0x303F), (0xFE00, 0xFE2F), (0x20D0, 0x20F0),
              (0xFEFF, 0xFEFF), (0xFF00, 0xFF65), (0xE000, 0xE00F), (0x1680, 0x1680), (0x180E, 0x180E),
              (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
              (0xFFF9, 0xFFFD), (0x4E00, 0x4E05), (0x9FFF, 0x9FFF), (0x3400, 0x3401), (0x20000, 0x20001)]
    out = []
    for lo, hi in blocks:
        for cp in range(lo, hi + 1):
            if not 0xD800 <= cp <= 0xDFFF:
                out.append(cp)
    return out


def main():
    pieces = build_vocab()
    assert len(pieces) == len(set(pieces))
    vocab = {p: i + 1 for i, p in enumerate(pieces)}  # 1-based: the line number
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")

    def encode(text, lower=True):
        words = basic_tokenize(text, lower)
        toks = [p for w in words for p in wordpiece(w, vocab)]
        return {"text": text, "lower": lower, "words": words, "pieces": toks, "ids": [vocab[p] for p in toks]}

    cases = [encode(s) for s in SENTENCES] + [encode(s, lower=False) for s in CASED]
    unk = vocab["[UNK]"]
    assert any(unk in c["ids"] for c in cases)
    coverage = [{"cp": cp, "words": basic_tokenize("x" + chr(cp) + "y")} for cp in coverage_points()]
    doc = {"generator": "scripts/refs/gen_bert_fixtures.py (HF BertTokenizer algorithm, Python unicodedata "
                        + unicodedata.unidata_version + ")",
           "specials": {s: vocab[s] for s in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]},
           "cases": cases, "coverage": coverage}
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote {len(pieces)} pieces, {len(cases)} sentences, {len(coverage)} code points to {OUT}")


if __name__ == "__main__":
    main()
