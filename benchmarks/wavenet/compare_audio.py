"""How much a synthesized utterance looks like the recording it was conditioned on (same
phonemes, durations and F0): correlation of the 10 ms log-energy envelopes, RMS level, and
spectral flatness (white noise ≈ 0.56, speech ≈ 0.0x). Numpy only.
Usage: python3 compare_audio.py SYNTH.wav ORIGINAL.wav [...pairs]"""
import sys, wave
import numpy as np

def read(p):
    w = wave.open(p)
    x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64) / 32768
    return x, w.getframerate()

def envelope_db(x, r):
    h = int(r * 0.01)
    n = len(x) // h
    return 20 * np.log10(np.sqrt((x[: n * h].reshape(n, h) ** 2).mean(1)) + 1e-4)

def flatness(x):
    f = np.abs(np.fft.rfft(x[: len(x) // 512 * 512].reshape(-1, 512) * np.hanning(512), axis=1)) ** 2 + 1e-12
    return float(np.mean(np.exp(np.mean(np.log(f), 1)) / np.mean(f, 1)))

args = sys.argv[1:]
rng = np.random.default_rng(0)
for s_path, o_path in zip(args[::2], args[1::2]):
    s, rs = read(s_path)
    o, ro = read(o_path)
    es, eo = envelope_db(s, rs), envelope_db(o, ro)
    n = min(len(es), len(eo))
    noise = rng.normal(0, np.sqrt((o ** 2).mean()), len(o))
    print(f"{s_path}: {len(s) / rs:.2f} s; envelope correlation {np.corrcoef(es[:n], eo[:n])[0, 1]:.3f}; "
          f"RMS {np.sqrt((s ** 2).mean()):.4f} (recording {np.sqrt((o ** 2).mean()):.4f}); "
          f"spectral flatness {flatness(s):.3f} (recording {flatness(o):.3f}, white noise {flatness(noise):.3f})")
