"""Regenerate examples/sample/volcanoes.pdf, the PDF of the demo corpus.

Run from the repository root with the dev dependencies installed:

    .venv/bin/python scripts/make_sample_pdf.py

The output is byte-for-byte reproducible, so the committed PDF only changes
when the text below does.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The PDF writer is shared with the tests, which build their PDFs the same way.
sys.path.insert(0, str(ROOT))

from tests.corpus import write_sample_pdf  # noqa: E402

TITLE = "Volcanoes: Types and Eruptions"

TYPES_OF_VOLCANOES = [
    "A volcano is an opening in the crust of the Earth where molten rock, gas and ash escape "
    "from below the surface. Molten rock is called magma while it is underground and lava once "
    "it reaches the surface. Volcanoes take different shapes depending on how runny their lava "
    "is and on how violently they erupt.",
    "Shield volcanoes are broad, gently sloping mountains built from many thin flows of runny "
    "basalt lava. Their shape resembles a warrior's shield lying on the ground. Mauna Loa in "
    "Hawaii is a shield volcano and the largest active volcano on Earth by volume. Its lava "
    "flows can travel tens of kilometres before they cool and harden.",
    "Stratovolcanoes, also called composite volcanoes, are steep cones made of alternating "
    "layers of lava, ash and rock fragments. Their lava is thick and sticky, so gas is trapped "
    "inside until it escapes in an explosion. Mount Fuji in Japan and Mount St. Helens in the "
    "United States are stratovolcanoes.",
    "Cinder cones are the smallest type. They form when blobs of lava are thrown into the air, "
    "cool into cinders and fall around a single vent, building a cone that is rarely more than "
    "a few hundred metres high. A caldera is a large basin that forms when the ground collapses "
    "into an emptied magma chamber after a very large eruption.",
    "Most volcanoes stand where the plates of the Earth's crust meet. The Pacific Ring of Fire, "
    "a chain of volcanoes around the edge of the Pacific Ocean, holds most of the world's active "
    "volcanoes. Hawaii is different: its volcanoes sit over a hot spot in the middle of a plate.",
]

ERUPTIONS = [
    "An eruption begins when magma rises towards the surface. As the magma rises, the pressure "
    "on it falls and dissolved gases form bubbles, much like the bubbles in a bottle of soda "
    "when it is opened. If the gas escapes easily, the eruption is effusive and lava flows out "
    "steadily. If the gas is trapped in sticky magma, the eruption is explosive.",
    "Explosive eruptions throw ash high into the atmosphere. The most dangerous events are "
    "pyroclastic flows: avalanches of hot gas, ash and rock that rush down the slopes of a "
    "volcano at more than 100 kilometres per hour and destroy everything in their path.",
    "Mount Vesuvius in Italy buried the Roman town of Pompeii in 79 AD. During the eruption, "
    "ash and pumice fell on the town for many hours, and pyroclastic flows then swept through "
    "Pompeii and nearby Herculaneum. The ash preserved buildings, paintings and the shapes of "
    "the victims, so the towns now show how ordinary Romans lived. A witness, Pliny the "
    "Younger, described the eruption in two letters written years later.",
    "Scientists watch active volcanoes for signs of an eruption: small earthquakes, swelling "
    "of the ground and changes in the gases coming from vents. These warnings have allowed "
    "people to be evacuated before major eruptions.",
    "Large eruptions can change the weather far away. The eruption of Mount Tambora in Indonesia "
    "in 1815 filled the upper atmosphere with fine ash and sulphur gases, and the following year, "
    "1816, became known in Europe and North America as the Year Without a Summer.",
]


def main() -> None:
    output = ROOT / "examples" / "sample" / "volcanoes.pdf"
    write_sample_pdf(
        output,
        [TYPES_OF_VOLCANOES, ERUPTIONS],
        title=TITLE,
        sections=["Types of volcanoes", "Eruptions"],
    )
    print(f"wrote {output.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
