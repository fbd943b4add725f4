"""The artifact tests publish the vocabularies tests/vocabgen/conftest.py makes (trained and validated by the real
steps, or hand-made), to the stores it opens (S3 on loopback, behind a proxy that fails on cue, and the directory
store): its fixtures, imported so that pytest finds them here too."""

from tests.vocabgen.conftest import (  # noqa: F401 (fixtures)
    _pystow_home,
    csrc_corpus_dir,
    ir_dataset,
    s3_proxy,
    store,
    trained,
    trained_other,
    validated,
    validated_other,
)
