#!/usr/bin/env python3
"""librosa MFCC and parselmouth (Praat) pitch throughput on a directory of WAVs,
one thread, with the settings of dv_audio (MFCC: 20 coefficients, hop 164, window 410,
n_fft 512, 40 mel bands; pitch: "To Pitch (ac)", 1/256 s, 75-500 Hz). Audio is resampled
to 16384 Hz before the clock starts. The other half of dsp_throughput.sh.

python3 benchmarks/dsp_throughput.py <wav dir> [max files]   (librosa 0.11.0, praat-parselmouth 0.4.7)
"""
import glob
import os
import sys
import time

import librosa
import parselmouth
import soundfile as sf

files = sorted(glob.glob(os.path.join(sys.argv[1], "*.wav")))[: int(sys.argv[2]) if len(sys.argv) > 2 else None]
ys = []
for f in files:
    y, sr = sf.read(f, dtype="float64")
    ys.append(librosa.resample(y, orig_sr=sr, target_sr=16384))
secs = sum(len(y) for y in ys) / 16384
librosa.feature.mfcc(y=ys[0], sr=16384)  # warm-up (numba)
t = time.perf_counter()
for y in ys:
    librosa.feature.mfcc(y=y, sr=16384, n_mfcc=20, n_fft=512, hop_length=164, win_length=410, n_mels=40, fmax=8192)
tm = time.perf_counter() - t
t = time.perf_counter()
for y in ys:
    parselmouth.Sound(y, 16384).to_pitch_ac(time_step=1 / 256, pitch_floor=75.0, pitch_ceiling=500.0)
tp = time.perf_counter() - t
print(f"{len(ys)} files, {secs:.1f} s of audio at 16384 Hz")
print(f"librosa+parselmouth threads=1: mfcc {secs / tm:.0f} audio-s/s, pitch {secs / tp:.0f} audio-s/s, "
      f"mfcc+pitch {secs / (tm + tp):.0f} audio-s/s")
