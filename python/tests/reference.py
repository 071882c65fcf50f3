"""References the tests hold whisper_stem to, written apart from the C library:

- log_mel_f64: openai-whisper's log_mel_spectrogram (whisper/audio.py) in float64 NumPy,
  with openai's own filter banks (tests/data/mel_filters.npz, saved from librosa);
- log_mel_torch: the same function as openai writes it, in PyTorch (float32);
- hf_features: Hugging Face's WhisperFeatureExtractor math (transformers
  feature_extraction_whisper.py + audio_utils.spectrogram / mel_filter_bank), NumPy.
"""

import os

import numpy as np

N_FFT = 400
HOP = 160
N_SAMPLES = 480000
LOG_FLOOR = 1e-10  # log10 floor, audio.py's clamp(min=1e-10)
DYN_RANGE = 8.0    # max - 8: 80 dB below the peak (audio.py)

# the repository (samples/, tests/data/); WS_ROOT when the tests run from a copy of python/tests
# against an installed package (scripts/test-wheel.sh)
ROOT = os.environ.get("WS_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def mel_filters(n_mels):
    """openai's filter bank [n_mels, 201] (float32 values from its npz)."""
    with np.load(os.path.join(ROOT, "tests", "data", "mel_filters.npz")) as f:
        return f["mel_%d" % n_mels]


def pad_or_trim(audio, length=N_SAMPLES):
    a = np.asarray(audio)[:length]
    return np.pad(a, (0, length - a.shape[0]))


def periodic_hann(n=N_FFT):
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)


def _frames(x):
    """[n_frames, 400] of the centred, reflect-padded signal (torch.stft(center=True))."""
    x = np.pad(x, N_FFT // 2, mode="reflect")
    n = 1 + (x.shape[0] - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n)[:, None]
    return x[idx]


def log_mel_f64(audio, n_mels=80):
    """openai's log_mel_spectrogram(audio) in float64: [n_mels, n // 160]."""
    x = np.asarray(audio, dtype=np.float64)
    spec = np.fft.rfft(_frames(x) * periodic_hann(), axis=1)[:-1]  # last frame dropped
    power = (spec.real ** 2 + spec.imag ** 2).T                    # [201, n_frames]
    mel = mel_filters(n_mels).astype(np.float64) @ power
    log = np.log10(np.maximum(mel, LOG_FLOOR))
    log = np.maximum(log, log.max() - DYN_RANGE)
    return (log + 4.0) / 4.0


def log_mel_torch(audio, n_mels=80, filters=None, window=None):
    """openai's log_mel_spectrogram, as whisper/audio.py writes it (torch, float32).

    audio: a float32 tensor [n] or [B, n]; the floor is per example for a batch.
    """
    import torch

    if window is None:
        window = torch.hann_window(N_FFT)
    if filters is None:
        filters = torch.from_numpy(mel_filters(n_mels))
    stft = torch.stft(audio, N_FFT, HOP, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    mel_spec = filters @ magnitudes
    log_spec = torch.clamp(mel_spec, min=LOG_FLOOR).log10()
    peak = log_spec.amax(dim=(-2, -1), keepdim=True)
    log_spec = torch.maximum(log_spec, peak - DYN_RANGE)
    return (log_spec + 4.0) / 4.0


# --- Hugging Face's extractor ------------------------------------------------------------

def _hz_to_mel_slaney(f):
    f = np.asarray(f, dtype=np.float64)
    mel = 3.0 * f / 200.0
    logstep = 27.0 / np.log(6.4)
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-300) / 1000.0) * logstep, mel)


def _mel_to_hz_slaney(m):
    m = np.asarray(m, dtype=np.float64)
    logstep = np.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), 200.0 * m / 3.0)


def hf_mel_filter_bank(n_mels=80, n_freqs=N_FFT // 2 + 1, sr=16000, fmax=8000.0):
    """transformers.audio_utils.mel_filter_bank(..., norm="slaney", mel_scale="slaney"): [201, n_mels] float64."""
    mel_freqs = np.linspace(_hz_to_mel_slaney(0.0), _hz_to_mel_slaney(fmax), n_mels + 2)
    filter_freqs = _mel_to_hz_slaney(mel_freqs)
    fft_freqs = np.linspace(0, sr // 2, n_freqs)
    diff = np.diff(filter_freqs)
    slopes = filter_freqs[None, :] - fft_freqs[:, None]
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    bank = np.maximum(0.0, np.minimum(down, up))
    enorm = 2.0 / (filter_freqs[2:n_mels + 2] - filter_freqs[:n_mels])
    return bank * enorm[None, :]


def hf_features(examples, n_mels=80):
    """WhisperFeatureExtractor(feature_size=n_mels)(examples, sampling_rate=16000).input_features:
    each example as float32, cut or zero-padded to 480000, then audio_utils.spectrogram
    (float64 frames x periodic Hann, rfft stored as complex64, power in float64, mel in
    float64, max(1e-10), log10, to float32), last frame dropped, max - 8, (x + 4) / 4."""
    bank = hf_mel_filter_bank(n_mels)
    out = []
    for x in examples:
        x = pad_or_trim(np.asarray(x, dtype=np.float32))
        spec = np.fft.rfft(_frames(x.astype(np.float64)) * periodic_hann(), axis=1).astype(np.complex64)
        power = np.abs(spec, dtype=np.float64) ** 2
        mel = np.maximum(LOG_FLOOR, bank.T @ power.T)
        log = np.log10(mel).astype(np.float32)[:, :-1]
        log = np.maximum(log, log.max() - np.float32(DYN_RANGE))
        out.append((log + np.float32(4.0)) / np.float32(4.0))
    return np.stack(out).astype(np.float32)
