-- graphmert.nn — layers with forward, parameters() and PyTorch-named state_dict().
local nn = {
  -- building blocks
  Module = require "graphmert.nn.Module",
  Linear = require "graphmert.nn.Linear",
  Sequential = require "graphmert.nn.Sequential",
  Embedding = require "graphmert.nn.Embedding",
  LayerNorm = require "graphmert.nn.LayerNorm",
  MultiheadAttention = require "graphmert.nn.MultiheadAttention",
  EncoderLayer = require "graphmert.nn.EncoderLayer",
  -- GraphMERT: the encoder and its spatial-decay mask (H-GAT is the C op gm.hgat)
  GraphMERT = require "graphmert.nn.GraphMERT",
  DecayMask = require "graphmert.nn.DecayMask",
  -- the attention families GraphMERT is compared with (ATTENTION_VARIANTS.md): a masked
  -- graph-attention stack, DiGress node–edge attention, volume-preserving (Cayley) attention,
  -- geometric multi-head attention and GAT
  GraphAttentionStack = require "graphmert.nn.GraphAttentionStack",
  NodeEdgeBlock = require "graphmert.nn.NodeEdgeBlock",
  XEyTransformerLayer = require "graphmert.nn.XEyTransformerLayer",
  VolumePreservingAttention = require "graphmert.nn.VolumePreservingAttention",
  GeometricMultiHeadAttention = require "graphmert.nn.GeometricMultiHeadAttention",
  GATConv = require "graphmert.nn.GATConv",
}
for name, cls in pairs(require "graphmert.nn.activations") do nn[name] = cls end
return nn
