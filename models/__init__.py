"""subword's companion PyTorch package: attention building blocks and the BERT family.

>>> import torch
>>> from models import BertConfig, BertModel
>>> model = BertModel(BertConfig.preset("tiny", vocab_size=100)).eval()
>>> tuple(model(torch.tensor([[2, 7, 3]])).last_hidden_state.shape)
(1, 3, 64)
"""

from models.albert import AlbertForPreTraining as AlbertForPreTraining
from models.albert import AlbertModel as AlbertModel
from models.attention import AdditiveAttention as AdditiveAttention
from models.attention import BlockSparseAttention as BlockSparseAttention
from models.attention import MultiHeadAttention as MultiHeadAttention
from models.attention import NadarayaWatsonRegression as NadarayaWatsonRegression
from models.attention import masked_softmax as masked_softmax
from models.attention import nadaraya_watson as nadaraya_watson
from models.attention import scaled_dot_product_attention as scaled_dot_product_attention
from models.bert import BertForPreTraining as BertForPreTraining
from models.bert import BertModel as BertModel
from models.bert import EncoderOutput as EncoderOutput
from models.bert import PreTrainingOutput as PreTrainingOutput
from models.bigbird import BigBirdForPreTraining as BigBirdForPreTraining
from models.bigbird import BigBirdModel as BigBirdModel
from models.config import AlbertConfig as AlbertConfig
from models.config import BertConfig as BertConfig
from models.config import BigBirdConfig as BigBirdConfig
from models.config import DistilBertConfig as DistilBertConfig
from models.config import RobertaConfig as RobertaConfig
from models.config import XLNetConfig as XLNetConfig
from models.config import preset as preset
from models.distilbert import DistilBertForMaskedLM as DistilBertForMaskedLM
from models.distilbert import DistilBertModel as DistilBertModel
from models.distilbert import init_from_teacher as init_from_teacher
from models.encoder import Encoder as Encoder
from models.encoder import EncoderLayer as EncoderLayer
from models.hf import from_hf as from_hf
from models.hf import to_hf as to_hf
from models.registry import build_model as build_model
from models.registry import count_parameters as count_parameters
from models.roberta import RobertaForMaskedLM as RobertaForMaskedLM
from models.roberta import RobertaModel as RobertaModel
from models.xlnet import XLNetLMHeadModel as XLNetLMHeadModel
from models.xlnet import XLNetModel as XLNetModel
from models.xlnet import XLNetOutput as XLNetOutput

__all__ = [
    "AdditiveAttention",
    "AlbertConfig",
    "AlbertForPreTraining",
    "AlbertModel",
    "BertConfig",
    "BertForPreTraining",
    "BertModel",
    "BigBirdConfig",
    "BigBirdForPreTraining",
    "BigBirdModel",
    "BlockSparseAttention",
    "DistilBertConfig",
    "DistilBertForMaskedLM",
    "DistilBertModel",
    "Encoder",
    "EncoderLayer",
    "EncoderOutput",
    "MultiHeadAttention",
    "NadarayaWatsonRegression",
    "PreTrainingOutput",
    "RobertaConfig",
    "RobertaForMaskedLM",
    "RobertaModel",
    "XLNetConfig",
    "XLNetLMHeadModel",
    "XLNetModel",
    "XLNetOutput",
    "build_model",
    "count_parameters",
    "from_hf",
    "init_from_teacher",
    "masked_softmax",
    "nadaraya_watson",
    "preset",
    "scaled_dot_product_attention",
    "to_hf",
]
