"""The fit cache (service/advice.get_model, predict/fit.save_model/load_model): one file per
key, named by a short zlib hash of the key and holding the whole key, so a name collision is
a miss, never another store's fit; a damaged file is a miss and is removed."""

from __future__ import annotations

import numpy as np

from fsadvisor.predict.settings import ModelSettings
from fsadvisor.predict.fit import fit, load_model, save_model
from fsadvisor.service import advice
from fsadvisor.store import open_store


def _model():
    with open_store() as store:
        store.ensure_seeded()
        obs = store.observations()
    return fit(obs[:400], ModelSettings.load())


def test_a_saved_fit_reads_back_whole_under_its_key(tmp_path):
    m = _model()
    path = tmp_path / "m.fit"
    save_model(m, path, key="store-a|settings")
    back = load_model(path, m.settings, key="store-a|settings")
    assert back is not None
    assert back.names == m.names and back.index == m.index
    assert np.array_equal(back.theta, m.theta) and np.array_equal(back.cov, m.cov)
    assert back.theta.flags["C_CONTIGUOUS"] and back.theta.base is None
    assert (back.noise_sd, back.n_rows, back.data_hash) == (m.noise_sd, m.n_rows, m.data_hash)


def test_another_key_is_a_miss_and_leaves_the_file(tmp_path):
    m = _model()
    path = tmp_path / "m.fit"
    save_model(m, path, key="store-a|settings")
    assert load_model(path, m.settings, key="store-b|settings") is None
    assert path.is_file()  # another state's fit, intact: not this one's to delete


def test_a_damaged_file_is_a_miss_and_is_removed(tmp_path):
    m = _model()
    path = tmp_path / "m.fit"
    save_model(m, path, key="k")
    data = path.read_bytes()
    head = b"fsadvisor-model 1\n"
    for bad in (
        b"",
        b"garbage",
        data[: len(data) // 2],
        head + b"{not json\n",
        head + b'{"key": "k"}\n' + data[-64:],  # this key, no fit behind it
        head + b'{"key": "k", "names": ["a"]}\n' + data[data.index(b"\x93NUMPY") :],
    ):
        path.write_bytes(bad)
        assert load_model(path, m.settings, key="k") is None
        assert not path.exists()
    assert load_model(tmp_path / "absent.fit", m.settings, key="k") is None


def test_get_model_names_the_file_by_a_hash_of_the_whole_key(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    advice._cache.clear()
    m1 = advice.get_model()
    files = list((tmp_path / "cache" / "fsadvisor").glob("model-*.fit"))
    assert len(files) == 1 and len(files[0].stem) == len("model-") + 16
    advice._cache.clear()
    m2 = advice.get_model()  # from the file
    assert np.array_equal(m1.theta, m2.theta) and m1.names == m2.names
    assert advice._cache_file("a") != advice._cache_file("b")
