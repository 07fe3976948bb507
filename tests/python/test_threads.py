"""The caches reachable from Python under threads that switch as often as the interpreter allows."""
import sys
import threading
import time

import rooflinepy as rp
from rooflinepy import inference


def run_switching_often(target, args_list):
    """Run target(*args) on one thread per args, with the interpreter switching threads as often as it can."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=target, args=a) for a in args_list]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)


def test_plan_cache_evicted_by_many_threads_at_once_raises_nothing_and_answers_the_same(monkeypatch):
    configs = [(q, d, fa) for q in ("Q4_0", "Q8_0", "F16") for d in ("rtx-4090", "m4-pro", "a100") for fa in (False, True)]
    expected = {c: rp.estimate("qwen3-4b", c[0], c[1], flash_attention=c[2]).decode_tokens_per_s for c in configs}
    class SlowToEvict(dict):
        """A cache whose eviction takes long enough for another thread to pick the same victim (the race of the
        review: two threads popping one key gave a KeyError of object ids)."""

        def pop(self, key, *default):
            time.sleep(0.0005)
            return super().pop(key, *default)

    monkeypatch.setattr(inference, "_PLANS", SlowToEvict())
    monkeypatch.setattr(inference, "_PLANS_MAX", 3)  # every few calls evict: the path the race was on
    errors, wrong = [], []

    def work(k):
        try:
            for i in range(150):
                c = configs[(i * 7 + k) % len(configs)]
                v = rp.estimate("qwen3-4b", c[0], c[1], flash_attention=c[2]).decode_tokens_per_s
                if v != expected[c]:
                    wrong.append((c, v))
        except Exception as e:  # noqa: BLE001 - any exception is the failure this test looks for
            errors.append(repr(e))

    run_switching_often(work, [(k,) for k in range(8)])
    assert errors == [] and wrong == []
    assert len(inference._PLANS) <= 3


def test_sweeps_and_estimates_from_threads_agree_with_one_thread():
    kw = dict(models=["qwen3-4b"], quants=["Q4_0", "Q8_0"], devices=["rtx-4090", "m4-pro"], batch=[1, 4],
              prompt_tokens=[128], gen_tokens=[64])
    ref = rp.sweep(**kw)
    out, errors = [], []

    def work():
        try:
            out.append(rp.sweep(**kw, threads=2))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    run_switching_often(work, [()] * 4)
    assert errors == []
    for df in out:
        assert df["decode_tokens_per_s"].tolist() == ref["decode_tokens_per_s"].tolist()
