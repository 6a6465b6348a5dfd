"""Model runtimes: image decoding, the SigLIP encoder, the micro-batcher and parity tooling.

Importing this package imports nothing heavy; each module pulls in torch or PIL only when it
is itself imported, so the batcher stays usable (and testable) without torch.
"""
