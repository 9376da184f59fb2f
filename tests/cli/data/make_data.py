#!/usr/bin/python3
# tests/cli/data/make_data.py -- writes the .npy inputs and numpy-computed expected outputs the rlx
# command-line tests use, and the seed corpus of the .npy fuzzer (tests/fuzz/corpus_npy/).
# Run with Debian's /usr/bin/python3 (numpy) from anywhere; the output is committed, so the tests
# themselves need no Python.
import io
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FUZZ = os.path.join(HERE, '..', '..', 'fuzz', 'corpus_npy')


def save(name, array):
    np.save(os.path.join(HERE, name), array, allow_pickle=False)


def npy_bytes(array, version=None):
    f = io.BytesIO()
    np.lib.format.write_array(f, np.asanyarray(array), version=version, allow_pickle=False)
    return f.getvalue()


def write_raw(directory, name, data):
    with open(os.path.join(directory, name), 'wb') as f:
        f.write(data)


def cli_data():
    rng = np.random.default_rng(20240601)
    f32 = np.float32

    # mlp.rlx: relu(x @ w + b), output labelled "hidden".
    x = rng.standard_normal((2, 3)).astype(f32)
    w = rng.standard_normal((3, 4)).astype(f32)
    b = rng.standard_normal(4).astype(f32)
    save('mlp_x.npy', x)
    save('mlp_w.npy', w)
    save('mlp_b.npy', b)
    save('mlp_expected.npy', np.maximum(x @ w + b, f32(0)))

    # dynamic.rlx: x is [?batch, 3]; outputs y = x @ w and tanh(y).sum(axis=1).
    xd = rng.standard_normal((5, 3)).astype(f32)
    wd = rng.standard_normal((3, 2)).astype(f32)
    yd = xd @ wd
    save('dyn_x.npy', xd)
    save('dyn_w.npy', wd)
    save('dyn_expected_y.npy', yd)
    save('dyn_expected_sums.npy', np.tanh(yd).sum(axis=1, dtype=f32))

    # ints.json: a * b + a in i32.
    a = np.array([1, -2, 30000, 7], dtype=np.int32)
    bi = np.array([5, 6, -3, 0], dtype=np.int32)
    save('ints_a.npy', a)
    save('ints_b.npy', bi)
    save('ints_expected.npy', a * bi + a)

    # Inputs for the error cases.
    save('two_a.npy', rng.standard_normal((2, 3)).astype(f32))
    save('two_b.npy', rng.standard_normal((4, 3)).astype(f32))
    save('x_3x3.npy', rng.standard_normal((3, 3)).astype(f32))
    save('x_i32.npy', np.arange(6, dtype=np.int32).reshape(2, 3))
    save('x_rank1.npy', rng.standard_normal(3).astype(f32))
    write_raw(HERE, 'truncated.npy', npy_bytes(x)[:-5])
    write_raw(HERE, 'not_npy.npy', b'this is not a .npy file\n')


def fuzz_seeds():
    os.makedirs(FUZZ, exist_ok=True)
    seeds = {
        'f32_2x3_v1.npy': npy_bytes(np.arange(6, dtype='<f4').reshape(2, 3), (1, 0)),
        'f64_scalar.npy': npy_bytes(np.float64(2.5)),
        'f16_v2.npy': npy_bytes(np.array([1, -2, 0.5], dtype='<f2'), (2, 0)),
        'i8_v3.npy': npy_bytes(np.array([-1, 2, 127], dtype='i1'), (3, 0)),
        'i16_2x2.npy': npy_bytes(np.array([[1, -2], [3, 4]], dtype='<i2')),
        'i32_empty.npy': npy_bytes(np.zeros((0, 3), dtype='<i4')),
        'i64.npy': npy_bytes(np.array([1 << 40, -5], dtype='<i8')),
        'u8.npy': npy_bytes(np.array([0, 255], dtype='u1')),
        'u32.npy': npy_bytes(np.array([7, 4000000000], dtype='<u4')),
        'bool.npy': npy_bytes(np.array([True, False, True])),
        'c64.npy': npy_bytes(np.array([1 + 2j, -0.5j], dtype='<c8')),
        'fortran_1d.npy': npy_bytes(np.asfortranarray(np.arange(3, dtype='<f4'))),
        # Rejected inputs: Fortran order (rank 2), big-endian, truncated data, bad magic.
        'bad_fortran_2d.npy': npy_bytes(np.asfortranarray(np.ones((2, 3), dtype='<f4'))),
        'bad_big_endian.npy': npy_bytes(np.array([1, 2], dtype='>f4')),
        'bad_truncated.npy': npy_bytes(np.arange(8, dtype='<f8'))[:-3],
        'bad_magic.npy': b'\x93NUMPX\x01\x00' + npy_bytes(np.ones(2, dtype='<f4'))[8:],
    }
    for name, data in seeds.items():
        write_raw(FUZZ, name, data)


if __name__ == '__main__':
    cli_data()
    fuzz_seeds()
