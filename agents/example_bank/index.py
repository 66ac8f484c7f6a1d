"""Similarity of question skeletons: TF-IDF cosine over their unigrams and bigrams.

The inverted index is compiled to numpy arrays, so a search over 10,000 examples costs about a
millisecond and needs no network or embedding model; the bank rebuilds it lazily after additions.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .qtypes import QTYPES


def features(skeleton: str) -> dict[str, int]:
    """Term counts of a skeleton: its words, and its word pairs with start/end markers."""
    words = skeleton.split()
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    padded = ["^"] + words + ["$"]
    for a, b in zip(padded, padded[1:]):
        key = f"{a} {b}"
        counts[key] = counts.get(key, 0) + 1
    return counts


class SkeletonIndex:
    """The inverted index as numpy arrays: feature -> (example ids, L2-normalised weights).

    ``qtypes`` and ``dbs`` are per-example codes (index in :data:`QTYPES`, database code in
    ``db_codes``) so a search can mask out examples by type or database in one array operation.
    """

    def __init__(self, qtypes: Sequence[str], db_ids: Sequence[str | None],
                 features: list[dict[str, int]]):
        n = len(features)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, feats in enumerate(features):
            for f, tf in feats.items():
                ids, tfs = postings.setdefault(f, ([], []))
                ids.append(i)
                tfs.append(1.0 + math.log(tf))
        self.idf = {f: math.log((n + 1) / (len(ids) + 1)) + 1.0 for f, (ids, _) in postings.items()}
        self.unseen_idf = math.log(n + 1) + 1.0
        norms = np.zeros(n, dtype=np.float64)
        arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for f, (ids, tfs) in postings.items():
            id_arr = np.asarray(ids, dtype=np.int32)
            w_arr = np.asarray(tfs, dtype=np.float64) * self.idf[f]
            norms[id_arr] += w_arr * w_arr
            arrays[f] = (id_arr, w_arr)
        norms = np.sqrt(norms)
        norms[norms == 0] = 1.0
        self.postings = {f: (ids, (w / norms[ids]).astype(np.float32))
                         for f, (ids, w) in arrays.items()}
        self.size = n
        self.qtypes = np.asarray([QTYPES.index(q) for q in qtypes], dtype=np.int8)
        self.db_codes: dict[str, int] = {}
        self.dbs = np.asarray([self.db_codes.setdefault(d or "", len(self.db_codes))
                               for d in db_ids], dtype=np.int32)

    def score(self, feats: dict[str, int]) -> np.ndarray:
        """Cosine similarity of every example to a query's features."""
        scores = np.zeros(self.size, dtype=np.float32)
        weights = {f: (1.0 + math.log(tf)) * self.idf.get(f, self.unseen_idf)
                   for f, tf in feats.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        for f, w in weights.items():
            posting = self.postings.get(f)
            if posting is not None:
                ids, doc_w = posting
                scores[ids] += doc_w * np.float32(w / norm)
        return scores
