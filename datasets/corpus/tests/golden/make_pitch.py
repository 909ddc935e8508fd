#!/usr/bin/env python3
"""Golden F0 tracks from real Praat (parselmouth) for the pitch parity test
(datasets/corpus/tests/it/pitch.rs).

Input: the first N utterances of the embedded corpus, made by
    dv corpus make-default --utterances 12 --out /tmp/slt12
Output: pitch/<id>.f32 (little-endian float32 F0 per frame, 0 = unvoiced) and
pitch.json (per utterance: first frame time, step, frame count; Praat version).

Settings: Deep Voice's Praat script (App. A.3) through "To Pitch (ac)":
time step 1/256 s, floor 75 Hz, ceiling 500 Hz, Praat's defaults for the rest.

Run: python3 datasets/corpus/tests/golden/make_pitch.py /tmp/slt12   (praat-parselmouth==0.4.7)
"""
import json
import os
import sys

import numpy as np
import parselmouth

HERE = os.path.dirname(os.path.abspath(__file__))


def main(corpus):
    wavs = sorted(os.listdir(os.path.join(corpus, "wav")))
    out_dir = os.path.join(HERE, "pitch")
    os.makedirs(out_dir, exist_ok=True)
    meta = {"praat": parselmouth.PRAAT_VERSION, "parselmouth": parselmouth.VERSION, "utterances": {}}
    for name in wavs:
        uid = name[:-4]
        snd = parselmouth.Sound(os.path.join(corpus, "wav", name))
        pitch = snd.to_pitch_ac(time_step=1 / 256, pitch_floor=75.0, max_number_of_candidates=15,
                                very_accurate=False, silence_threshold=0.03, voicing_threshold=0.45,
                                octave_cost=0.01, octave_jump_cost=0.35, voiced_unvoiced_cost=0.14,
                                pitch_ceiling=500.0)
        f0 = pitch.selected_array["frequency"].astype("<f4")
        f0.tofile(os.path.join(out_dir, uid + ".f32"))
        xs = pitch.xs()
        meta["utterances"][uid] = {"start": float(xs[0]), "step": float(pitch.dt), "frames": int(len(f0)),
                                   "sample_rate": int(snd.sampling_frequency)}
    with open(os.path.join(HERE, "pitch.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
