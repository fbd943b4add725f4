"""The audio and image codec packages written as training data (workers/data/recipes.toml) compile with their
recipes."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.workers.conftest import lists_and_compiles


@pytest.mark.parametrize(("package", "sample", "expected", "left_out"), [
    ("lame", None, {"libmp3lame/lame.c", "libmp3lame/vector/xmm_quantize_sub.c", "mpglib/layer3.c",
                    "frontend/lame_main.c", "frontend/mp3rtp.c"},
     {"libmp3lame/gain_analysis.c", "frontend/get_audio.c", "frontend/gtkanal.c", "frontend/amiga_mpega.c",
      "Dll/BladeMP3EncDLL.c"}),
    ("twolame", None, {"libtwolame/twolame.c", "libtwolame/psycho_4.c", "simplefrontend/simplefrontend.c"},
     {"frontend/frontend.c"}),
    ("a52dec", None, {"liba52/parse.c", "libao/audio_out_oss.c", "src/a52dec.c", "test/compare.c"},
     {"src/getopt.c", "src/gettimeofday.c", "libao/audio_out_win.c"}),
    ("libdca", None, {"libdca/parse.c", "libao/convert2s16.c", "src/dcadec.c", "src/extract_dca.c"},
     {"src/getopt.c", "libao/audio_out_solaris.c"}),
    ("vo-aacenc", None, {"aacenc/src/aacenc.c", "aacenc/basic_op/basicop2.c", "common/cmnMemory.c"},
     {"aac-enc.c", "wavreader.c", "aacenc/SampleCode/AAC_E_SAMPLES.c"}),
    ("jbig2dec", None, {"jbig2.c", "jbig2_mmr.c", "jbig2_image_png.c", "jbig2dec.c", "sha1.c"},
     {"getopt.c", "getopt1.c", "memento.c", "pbm2png.c"}),
    # The two big ones (41 and 45 modules): a sample compiles, the whole is listed.
    ("faad2", 24, {"libfaad/decoder.c", "libfaad/sbr_dec.c", "frontend/main.c", "frontend/mp4read.c"},
     {"frontend/getopt.c", "frontend/unicode_support.c", "aacDECdrop/main.c", "plugins/xmms/src/libmp4.c"}),
    ("libmikmod", 24, {"playercode/mplayer.c", "playercode/virtch_common.c", "loaders/load_it.c",
                       "drivers/drv_oss.c", "mmio/mmio.c"},
     {"drivers/drv_alsa.c", "drivers/drv_win.c", "depackers/pp20.c", "loaders/load_umx.c", "posix/strstr.c"}),
])
def test_media_packages_compile(package: str, sample: int | None, expected: set[str], left_out: set[str],
                                tmp_path: Path, toolchain: Toolchain) -> None:
    """These packages (workers/data/recipes.toml) compile with nothing skipped (jbig2dec in the version its recipe
    falls back to); each lists the modules it should and none that its recipe leaves out, the copies of
    evaluation packages' code among them (GNU getopt, ReplayGain's analysis, libxmp's depackers)."""
    lists_and_compiles(package, sample, expected, left_out, (6, 150), tmp_path, toolchain)
