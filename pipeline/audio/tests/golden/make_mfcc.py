#!/usr/bin/env python3
"""Golden MFCCs from librosa for dv-audio's parity test (tests/it/mfcc.rs).

Inputs, both 16-bit mono WAVs committed next to this script:
  speech_16000.wav  "Hello world, this is a test of twenty-one things.", rendered by
                    festival + hts_engine (cmu_us_slt_arctic_hts), `sox -R ... rate -h 16000`
  noise_16384.wav   2 s of uniform white noise in [-0.5, 0.5], numpy seed 2017
Outputs: <input stem>.mfcc.f32, little-endian float32, frame-major [frames, 20],
and golden.json with the shapes and the librosa version.

Run: python3 pipeline/audio/tests/golden/make_mfcc.py  (librosa==0.11.0, numpy, soundfile)
"""
import json
import os

import librosa
import numpy as np
import soundfile as sf

HERE = os.path.dirname(os.path.abspath(__file__))


def params(sr):
    """The parameters of dv_audio::MfccConfig::for_rate."""
    win = int(round(sr / 40))
    return dict(n_mfcc=20, hop_length=int(round(sr / 100)), win_length=win,
                n_fft=1 << (win - 1).bit_length(), n_mels=40, fmin=0.0, fmax=sr / 2)


def main():
    rng = np.random.default_rng(2017)
    noise = rng.uniform(-0.5, 0.5, 2 * 16384)
    sf.write(os.path.join(HERE, "noise_16384.wav"), noise, 16384, subtype="PCM_16")
    meta = {"librosa": librosa.__version__, "files": {}}
    for name in ["speech_16000", "noise_16384"]:
        y, sr = sf.read(os.path.join(HERE, name + ".wav"), dtype="float64")
        p = params(sr)
        m = librosa.feature.mfcc(
            y=y, sr=sr, n_mfcc=p["n_mfcc"], n_fft=p["n_fft"], hop_length=p["hop_length"],
            win_length=p["win_length"], window="hann", center=True, pad_mode="constant",
            power=2.0, n_mels=p["n_mels"], fmin=p["fmin"], fmax=p["fmax"], htk=False,
            norm="ortho", dct_type=2, lifter=0)
        frames = m.T.astype("<f4")
        frames.tofile(os.path.join(HERE, name + ".mfcc.f32"))
        meta["files"][name] = {"sample_rate": sr, "samples": len(y), "frames": frames.shape[0],
                               "n_mfcc": frames.shape[1], "params": p,
                               "range": float(frames.max() - frames.min())}
    with open(os.path.join(HERE, "golden.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
