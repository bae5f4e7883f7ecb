"""BERT's encoder in Flax (``model``), its hyper-parameters read from a Hugging Face
``config.json`` (``config``) and its pretrained weights read from a Hugging Face folder
(``convert``): the text tower of VSE∞."""

from jitr.models.bert.config import BertConfig, read_config
from jitr.models.bert.convert import bert_params, load_pretrained
from jitr.models.bert.model import BertEncoder

__all__ = ["BertConfig", "BertEncoder", "bert_params", "load_pretrained", "read_config"]
