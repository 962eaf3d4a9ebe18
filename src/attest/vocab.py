"""Small value types several modules share: the tag vocabulary and the explanation refusal.

A leaf module (standard library only), so the stub backend, the corpus checker and
the scorers get these without importing a task module or a backend.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["REFUSAL", "TAGS", "TAG_GLOSSES", "Tag"]

# The exact answer an explanation gives when no stated interest matches the item.
REFUSAL = "Outside your stated interests."

Tag = Literal[
    # bench chemistry
    "organic-synthesis",
    "catalysis",
    "spectroscopy",
    "electrochemistry",
    "analytical-chemistry",
    "polymer-chemistry",
    "biochemistry",
    "materials-science",
    "computational-chemistry",
    # chemistry's neighbours
    "chemical-engineering",
    "drug-discovery",
    "lab-automation",
    # machine learning
    "deep-learning",
    "language-models",
    "reinforcement-learning",
    "computer-vision",
    "graph-neural-networks",
    "generative-models",
    "optimization",
    "model-evaluation",
    "interpretability",
    "datasets-benchmarks",
    # machine learning's neighbours, and the two fields together
    "statistics",
    "scientific-computing",
    "ml-for-chemistry",
]
TAGS: tuple[Tag, ...] = get_args(Tag)

TAG_GLOSSES: dict[Tag, str] = {
    "organic-synthesis": "making organic molecules: routes, reactions, reagents, total synthesis",
    "catalysis": "chemical catalysts and catalytic reactions (homogeneous, heterogeneous, enzymatic)",
    "spectroscopy": "measuring matter with light or fields: NMR, IR, Raman, UV-vis, X-ray, mass spectra",
    "electrochemistry": "electrodes, redox, batteries, electrolysis, electrocatalysis, corrosion",
    "analytical-chemistry": "identifying and quantifying substances: chromatography, assays, sensors",
    "polymer-chemistry": "polymers: making them, their chains, plastics, recycling by depolymerisation",
    "biochemistry": "chemistry of biomolecules: enzymes, proteins, metabolism",
    "materials-science": "solid materials and their properties: crystals, alloys, MOFs, thin films",
    "computational-chemistry": "quantum chemistry, DFT, molecular dynamics and other simulation of molecules",
    "chemical-engineering": "process scale-up, reactors, separations, plant design, flow processes",
    "drug-discovery": "finding and optimising medicines: targets, screening, lead optimisation",
    "lab-automation": "robots, self-driving labs and automated experiments",
    "deep-learning": "neural network architectures and how they are trained",
    "language-models": "large language models, transformers for text, prompting, fine-tuning",
    "reinforcement-learning": "agents learning from reward: policies, RLHF, bandits",
    "computer-vision": "models of images and video",
    "graph-neural-networks": "neural networks on graphs, including molecular graphs",
    "generative-models": "models that generate data: diffusion models, VAEs, GANs, flows",
    "optimization": "optimisers and training dynamics: SGD, Adam, learning rates, convergence",
    "model-evaluation": "measuring models: benchmarks, metrics, calibration, contamination, eval methodology",
    "interpretability": "explaining what models compute: probing, attribution, mechanistic analysis",
    "datasets-benchmarks": "new datasets, data curation and benchmark suites",
    "statistics": "statistical methods: inference, experimental design, Bayesian analysis, regression",
    "scientific-computing": "numerical methods, HPC, simulation software and its performance",
    "ml-for-chemistry": "machine learning applied to a chemical problem (molecules, reactions, materials)",
}
