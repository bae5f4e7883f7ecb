"""Input pipelines: the dataset registry, precomp readers, labelled vector folders (image
and text vectors with class labels: CMAL²R's Wikipedia and Pascal), batches,
vocabularies, relevance TFRecord readers, CVSE's concepts (official files and
:class:`ConceptData` built from captions), BERT's WordPiece tokenization of captions, CLIP's
BPE (:class:`ClipBpe`), SigLIP's Hugging Face tokenizer (:class:`HfTextTokenizer`), a CLIP
or SigLIP tower's evaluation and training image (:func:`eval_image`, :func:`train_image`),
image folders read as those inputs per batch (:class:`ImageFiles`, checked by
:func:`check_image_folder`), a text tower's captions (:class:`TowerTextVocab`), and
the official VSE∞ training augmentation of captions and regions. The jitr_shapes TFDS builder
(:mod:`!jitr.data.shapes.tfds`) imports TensorFlow Datasets: import it directly where it is
needed.
"""

from jitr.data.caption_augment import augment_caption, drop_regions
from jitr.data.clip_bpe import ClipBpe
from jitr.data.concept_data import (
  ConceptData,
  ConceptDataError,
  build_concept_data,
  caption_labels,
  concept_data_from_official,
  load_concept_data,
  save_concept_data,
)
from jitr.data.cvse_concepts import (
  ConceptStatistics,
  OfficialConcepts,
  read_category_concepts,
  read_concept_labels,
  read_concept_statistics,
  read_concept_vectors,
  read_concept_vocabulary,
  read_official_concepts,
)
from jitr.data.datasets import DATASETS, DatasetInfo, LabelledLayout, dataset_info
from jitr.data.hf_text_tokenizer import HfTextTokenizer
from jitr.data.image_files import ImageFiles
from jitr.data.image_folder_check import (
  FolderCheck,
  SplitImages,
  check_image_folder,
  format_folder_check,
)
from jitr.data.image_transforms import eval_image, train_image
from jitr.data.labelled import (
  LabelledDataError,
  LabelledSettings,
  LabelledSplit,
  read_labelled_folder,
)
from jitr.data.labelled_splits import labelled_splits
from jitr.data.official_vocab import (
  read_official_vocab,
  read_pickled_vocab,
  read_sgraf_vocab,
  read_vocab_file,
)
from jitr.data.pairs import (
  RetrievalSplit,
  TokenChunking,
  epoch_batches,
  make_batch,
  steps_per_epoch,
)
from jitr.data.precomp import PrecompError, PrecompSplit, build_precomp_vocab, load_precomp_split
from jitr.data.precomp_check import SplitCheck, check_precomp_folder, format_check_report
from jitr.data.relevance_reader import RelevanceTable, load_relevance_table
from jitr.data.tower_text_vocab import TowerTextVocab
from jitr.data.train_augment import TrainAugment
from jitr.data.vocab import Vocab, build_vocab
from jitr.data.wordpiece import WordPiece
from jitr.data.wordpiece_vocab import CaptionWords, WordPieceVocab

__all__ = [
  "CaptionWords",
  "ClipBpe",
  "ConceptData",
  "ConceptDataError",
  "ConceptStatistics",
  "DATASETS",
  "DatasetInfo",
  "HfTextTokenizer",
  "ImageFiles",
  "FolderCheck",
  "SplitImages",
  "TowerTextVocab",
  "LabelledDataError",
  "LabelledLayout",
  "LabelledSettings",
  "LabelledSplit",
  "OfficialConcepts",
  "PrecompError",
  "PrecompSplit",
  "RelevanceTable",
  "RetrievalSplit",
  "SplitCheck",
  "TokenChunking",
  "Vocab",
  "TrainAugment",
  "WordPiece",
  "WordPieceVocab",
  "augment_caption",
  "build_concept_data",
  "build_precomp_vocab",
  "build_vocab",
  "caption_labels",
  "check_precomp_folder",
  "concept_data_from_official",
  "dataset_info",
  "drop_regions",
  "epoch_batches",
  "eval_image",
  "train_image",
  "check_image_folder",
  "format_folder_check",
  "format_check_report",
  "labelled_splits",
  "load_concept_data",
  "load_precomp_split",
  "load_relevance_table",
  "make_batch",
  "read_category_concepts",
  "read_concept_labels",
  "read_concept_statistics",
  "read_concept_vectors",
  "read_concept_vocabulary",
  "read_official_concepts",
  "read_labelled_folder",
  "read_official_vocab",
  "read_pickled_vocab",
  "read_sgraf_vocab",
  "read_vocab_file",
  "save_concept_data",
  "steps_per_epoch",
]
