"""bench/tensegrity/gt.py (spec 003 §4.1–4.2, issue 16 item 5): regenerating the committed quick sets
(tests/data/tensegrity/air_quick.npz, throw_quick.npz, net_quick.npz) with the same seeds gives the same arrays bit for bit, and its training
controls are the XorShift sequence the Rust experiment regenerates (U[-100, 100], first rows checked by value)."""
import os, sys, tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "tensegrity"))
import gt  # noqa: E402

# torsion_experiments::tensegrity_noncontact_id::TensegrityRng::new(1000), first three u() (its unit test)
RUST_FIRST_3 = [0.4519069214928565, 0.7630670271136789, 0.7399709598151578]
COMMITTED = os.path.join(ROOT, "tests", "data", "tensegrity", "air_quick.npz")


def test_quick_set_regenerates_bit_for_bit():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "q.npz")
        gt.quick_set(path)
        new, old = np.load(path), np.load(COMMITTED)
        assert sorted(new.files) == sorted(old.files)
        for k in old.files:
            a, b = old[k], new[k]
            if a.dtype.kind in "fiu":
                assert a.shape == b.shape and np.array_equal(a, b), k
            else:
                assert (a == b).all(), k
    q = np.load(COMMITTED)
    assert q["qpos"].shape == (gt.QUICK_TRAIN + 1, 35) and q["ctrl"].shape == (gt.QUICK_TRAIN, 24)
    assert q["test_qpos_h100"].shape == (10, gt.STEPS // gt.CHECK_EVERY + 1, 35)
    # the controls span the range and change every step (1 ms hold)
    assert q["ctrl"].min() < -99 and q["ctrl"].max() > 99 and (q["ctrl"][1:] != q["ctrl"][:-1]).all()


def test_throw_quick_set_regenerates_bit_for_bit():
    # the contact experiment's set (tests/data/tensegrity/throw_quick.npz, gt.py --throw-quick-set)
    committed = os.path.join(ROOT, "tests", "data", "tensegrity", "throw_quick.npz")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.npz")
        gt.throw_quick_set(path)
        new, old = np.load(path), np.load(committed)
        assert sorted(new.files) == sorted(old.files)
        for k in old.files:
            a, b = old[k], new[k]
            assert a.shape == b.shape and (np.array_equal(a, b) if a.dtype.kind in "fiu" else (a == b).all()), k
    q = np.load(committed)
    n = len(gt.THROW_TRAIN) * (gt.STEPS // gt.THROW_PAIR_STRIDE)
    assert q["pair_qpos"].shape == (n, 42) and q["test_com"].shape == (10, gt.THROW_EVAL // gt.CHECK_EVERY + 1, 3)
    # the test throws travel about the paper's 2.35 m on average
    assert 2.0 < q["test_path"].mean() < 2.8


def test_net_quick_set_regenerates_bit_for_bit():
    # the learned contact models' set (tests/data/tensegrity/net_quick.npz, gt.py --net-quick-set): consecutive
    # states of the training and validation throws, the first rows equal to those throws' own
    committed = os.path.join(ROOT, "tests", "data", "tensegrity", "net_quick.npz")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "n.npz")
        gt.net_quick_set(path)
        new, old = np.load(path), np.load(committed)
        assert sorted(new.files) == sorted(old.files)
        for k in old.files:
            a, b = old[k], new[k]
            assert a.shape == b.shape and (np.array_equal(a, b) if a.dtype.kind in "fiu" else (a == b).all()), k
    q = np.load(committed)
    assert q["train_qpos"].shape == (gt.NET_QUICK_TRAIN + 1, 42) and q["val_qvel"].shape == (gt.NET_QUICK_VAL + 1, 36)
    t = np.load(os.path.join(ROOT, "tests", "data", "tensegrity", "throw_quick.npz"))
    assert np.array_equal(q["train_qpos"][0], t["pair_qpos"][0])  # throw "train", step 0


def test_bar3_quick_set_regenerates_bit_for_bit():
    # the 3-bar's set (tests/data/tensegrity/bar3_quick.npz, gt.py --bar3-quick-set): drop, rest, actuated run
    committed = os.path.join(ROOT, "tests", "data", "tensegrity", "bar3_quick.npz")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "b.npz")
        gt.bar3_quick_set(path)
        new, old = np.load(path), np.load(committed)
        assert sorted(new.files) == sorted(old.files)
        for k in old.files:
            a, b = old[k], new[k]
            assert a.shape == b.shape and (np.array_equal(a, b) if a.dtype.kind in "fiu" else (a == b).all()), k
    q = np.load(committed)
    assert q["drop_qpos"].shape == (gt.BAR3_DROP_STEPS // gt.CHECK_EVERY + 1, 21)
    assert q["gravity"][2] == -0.981 and q["rest_act"].shape == (3,)


def test_xorshift_matches_the_rust_generator():
    # splitmix64(1000) then xorshift64 (13, 7, 17); values printed by TensegrityRng's Rust test
    r = gt.XorShift(1000)
    assert [r.u() for _ in range(3)] == RUST_FIRST_3


if __name__ == "__main__":
    test_quick_set_regenerates_bit_for_bit()
    test_throw_quick_set_regenerates_bit_for_bit()
    test_xorshift_matches_the_rust_generator()
    print("ok")
