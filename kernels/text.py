"""The text the histogram chapter counts: Shakespeare's Complete Works, from Project Gutenberg.

``shakespeare()`` returns a ``Text`` (the bytes as a uint8 array, and where they came
from), trying in turn:

1. a local copy, if one is named (``local_copy=`` or the environment variable
   ``COURSE_SHAKESPEARE``: a path to ``pg100.txt`` or ``pg100.txt.gz``);
2. the on-disk cache of an earlier download (``$XDG_CACHE_HOME/numba-cuda-course``,
   by default ``~/.cache/numba-cuda-course``);
3. a download from Project Gutenberg with ``requests``, with a timeout, checked
   (size and header) before it is cached;
4. without network, a substitute: a few passages of Shakespeare repeated to the
   size of the Complete Works, labelled as a substitute wherever it is described.

It says in one printed line which one it used, and never fails for lack of network.
"""

import dataclasses
import gzip
import os
import pathlib

import numpy as np
import requests

URL = "https://www.gutenberg.org/cache/epub/100/pg100.txt"
TITLE = "The Complete Works of William Shakespeare (Project Gutenberg eBook #100)"
LOCAL_COPY_ENV = "COURSE_SHAKESPEARE"
CACHE_NAME = "pg100.txt"
SIZE_RANGE = (4_500_000, 8_000_000)  # bytes; editions so far are about 5.6 MB
HEADER_WORDS = (b"project gutenberg", b"complete works of william shakespeare")
TIMEOUT_S = 20.0

# Public-domain passages for the offline substitute, from the Complete Works.
SUBSTITUTE_PASSAGES = """\
Shall I compare thee to a summer's day?
Thou art more lovely and more temperate:
Rough winds do shake the darling buds of May,
And summer's lease hath all too short a date;
Sometime too hot the eye of heaven shines,
And often is his gold complexion dimm'd;
And every fair from fair sometime declines,
By chance or nature's changing course untrimm'd;
But thy eternal summer shall not fade,
Nor lose possession of that fair thou ow'st;
Nor shall Death brag thou wander'st in his shade,
When in eternal lines to time thou grow'st:
So long as men can breathe or eyes can see,
So long lives this, and this gives life to thee.

Let me not to the marriage of true minds
Admit impediments. Love is not love
Which alters when it alteration finds,
Or bends with the remover to remove.
O no! it is an ever-fixed mark
That looks on tempests and is never shaken;
It is the star to every wand'ring bark,
Whose worth's unknown, although his height be taken.
Love's not Time's fool, though rosy lips and cheeks
Within his bending sickle's compass come;
Love alters not with his brief hours and weeks,
But bears it out even to the edge of doom.
If this be error and upon me prov'd,
I never writ, nor no man ever lov'd.

HAMLET. To be, or not to be, that is the question:
Whether 'tis nobler in the mind to suffer
The slings and arrows of outrageous fortune,
Or to take arms against a sea of troubles,
And by opposing end them. To die--to sleep,
No more; and by a sleep to say we end
The heart-ache and the thousand natural shocks
That flesh is heir to: 'tis a consummation
Devoutly to be wish'd.

JAQUES. All the world's a stage,
And all the men and women merely players;
They have their exits and their entrances,
And one man in his time plays many parts,
His acts being seven ages.

MACBETH. To-morrow, and to-morrow, and to-morrow,
Creeps in this petty pace from day to day,
To the last syllable of recorded time;
And all our yesterdays have lighted fools
The way to dusty death. Out, out, brief candle!
Life's but a walking shadow, a poor player,
That struts and frets his hour upon the stage,
And then is heard no more. It is a tale
Told by an idiot, full of sound and fury,
Signifying nothing.

"""
SUBSTITUTE_BYTES = 5_589_889  # the size of the Complete Works (an older edition)


@dataclasses.dataclass
class Text:
    """A text as bytes, and where it came from."""

    data: np.ndarray  # uint8, one element per byte of the file
    source: str       # "local copy", "cache", "download" or "substitute"
    origin: str       # the path or URL it was read from
    note: str         # one plain sentence saying what was used and why

    @property
    def substitute(self):
        return self.source == "substitute"

    @property
    def title(self):
        """A short name for plots: says SUBSTITUTE when it is not the real text."""
        if self.substitute:
            return "SUBSTITUTE text (Shakespeare passages; Gutenberg not reachable)"
        return "Shakespeare, Complete Works (Project Gutenberg #100)"


def cache_dir():
    """Where downloads are kept: $XDG_CACHE_HOME/numba-cuda-course or ~/.cache/..."""
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "numba-cuda-course"


def problem(raw):
    """Why `raw` is not the Complete Works (a short phrase), or None if it looks right."""
    low, high = SIZE_RANGE
    if not low <= len(raw) <= high:
        return f"{len(raw):,} bytes, expected {low:,} to {high:,}"
    head = b" ".join(raw[:3000].lower().split())
    missing = [w.decode() for w in HEADER_WORDS if w not in head]
    if missing:
        return f"its header lacks {' and '.join(repr(m) for m in missing)}"
    return None


def _as_text(raw, source, origin, note):
    return Text(np.frombuffer(raw, dtype=np.uint8), source, origin, note)


def _read_local(path):
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def _download(url, timeout):
    """The checked body of `url`, or raise ValueError/requests.RequestException."""
    response = requests.get(url, timeout=timeout,
                            headers={"User-Agent": "numba-cuda-course (text histogram)"})
    response.raise_for_status()
    raw = response.content
    why = problem(raw)
    if why:
        raise ValueError(f"the download does not look like the Complete Works: {why}")
    return raw


def _reason(err, timeout):
    """A short phrase for why a download failed (requests' own messages run long)."""
    if isinstance(err, requests.Timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(err, requests.HTTPError):
        return f"HTTP error {err.response.status_code}"
    if isinstance(err, requests.ConnectionError):
        return "no network connection" + (" (the host name did not resolve)"
                                          if "resolve" in str(err).lower() else "")
    if isinstance(err, ValueError):
        return str(err)
    return f"{type(err).__name__}: {str(err)[:120]}"


def substitute_text(reason):
    """The offline stand-in: the passages above repeated to SUBSTITUTE_BYTES."""
    passages = SUBSTITUTE_PASSAGES.encode()
    raw = (passages * (SUBSTITUTE_BYTES // len(passages) + 1))[:SUBSTITUTE_BYTES]
    note = (f"SUBSTITUTE TEXT: Project Gutenberg could not be reached ({reason}), so this "
            f"is {len(SUBSTITUTE_PASSAGES.strip().split(chr(10) * 2))} passages of Shakespeare "
            f"repeated to {len(raw):,} bytes. Its counts are not those of the Complete Works; "
            "run the notebook with internet access to count the real text.")
    return _as_text(raw, "substitute", "kernels.text.SUBSTITUTE_PASSAGES", note)


def shakespeare(*, local_copy=None, url=URL, cache=None, timeout=TIMEOUT_S):
    """The Complete Works as a Text: local copy, cache, download, or the substitute.

    Prints one line saying which, and why. Never raises for lack of network."""
    cache = pathlib.Path(cache) if cache is not None else cache_dir()
    cached = cache / CACHE_NAME
    local_copy = local_copy or os.environ.get(LOCAL_COPY_ENV)
    text, failures = None, []
    if local_copy:
        path = pathlib.Path(local_copy)
        try:
            raw = _read_local(path)
            why = problem(raw)
        except (OSError, gzip.BadGzipFile, EOFError) as err:
            why = f"{type(err).__name__}: {err}"
        if why:
            failures.append(f"the local copy {path} was not usable: {why}")
        else:
            text = _as_text(raw, "local copy", str(path), f"{TITLE}: the local copy {path} "
                            f"({len(raw):,} bytes).")
    if text is None and cached.exists():
        raw = cached.read_bytes()
        why = problem(raw)
        if why:
            failures.append(f"the cached copy {cached} was not usable ({why}), so it was "
                            "downloaded again")
        else:
            text = _as_text(raw, "cache", str(cached), f"{TITLE}: read from the cache "
                            f"{cached} ({len(raw):,} bytes, downloaded earlier from {url}).")
    if text is None:
        try:
            raw = _download(url, timeout)
        except (requests.RequestException, ValueError) as err:
            failures.append(f"{url}: {_reason(err, timeout)}")
        else:
            cache.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(".part")
            partial.write_bytes(raw)
            partial.replace(cached)  # readers never see a half-written cache file
            text = _as_text(raw, "download", url, f"{TITLE}: downloaded from {url} "
                            f"({len(raw):,} bytes) and cached in {cached}.")
    if text is None:
        text = substitute_text(failures[-1])
    elif failures and text.source != "local copy":
        text.note += " (" + "; ".join(failures) + ")"
    print(text.note, flush=True)
    return text
