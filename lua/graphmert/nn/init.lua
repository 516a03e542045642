-- graphmert.nn — layers with forward, parameters() and PyTorch-named state_dict().
local nn = {
  Module = require "graphmert.nn.Module",
  Linear = require "graphmert.nn.Linear",
  Sequential = require "graphmert.nn.Sequential",
  DecayMask = require "graphmert.nn.DecayMask",
  MultiheadAttention = require "graphmert.nn.MultiheadAttention",
  Embedding = require "graphmert.nn.Embedding",
  LayerNorm = require "graphmert.nn.LayerNorm",
  EncoderLayer = require "graphmert.nn.EncoderLayer",
  GraphMERT = require "graphmert.nn.GraphMERT",
  GraphAttentionStack = require "graphmert.nn.GraphAttentionStack",
  NodeEdgeBlock = require "graphmert.nn.NodeEdgeBlock",
  XEyTransformerLayer = require "graphmert.nn.XEyTransformerLayer",
  VolumePreservingAttention = require "graphmert.nn.VolumePreservingAttention",
  GeometricMultiHeadAttention = require "graphmert.nn.GeometricMultiHeadAttention",
  GATConv = require "graphmert.nn.GATConv",
}
for name, cls in pairs(require "graphmert.nn.activations") do nn[name] = cls end
return nn
