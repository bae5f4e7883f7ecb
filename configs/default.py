"""Default: region encoder + GRU on jitr_shapes, triplet + Smooth-NDCG with sentence relevance.

Trains in about 4.5 minutes on 2 CPU cores (scripts/train.sh in all, the dataset and the
relevance records built first: about 7). Run:
  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default
"""

import ml_collections

from jitr.relevance.registry import default_estimator_settings

WARMUP = {"loss": "triplet", "weight": 1.0, "margin": 0.2, "mining": "sum"}


def with_warmup(terms: dict, epochs: int = 1) -> ml_collections.ConfigDict:
  """VSE∞'s warm-up: a sum-of-hinges triplet for the first ``epochs``, every
  given (hardest-negative) term from then on."""
  out = {"warmup": {**WARMUP, "until_epoch": epochs}}
  out.update({name: {**term, "from_epoch": epochs} for name, term in terms.items()})
  return ml_collections.ConfigDict(out)


def without_warmup(loss: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """The same terms, all active from the first step (VSE++ as published)."""
  terms = {name: dict(term) for name, term in loss.to_dict().items() if name != "warmup"}
  for term in terms.values():
    term.pop("from_epoch", None)
  return ml_collections.ConfigDict(terms)


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.seed = 0  # parameters' initialisation, batch order and every random draw of the run
  # "jitr_shapes" (built in), "f30k_precomp", "coco_precomp", "iaprtc12_precomp" or the
  # name of any other precomp folder under precomp_root, NAME_precomp; or labelled vectors
  # (below): "wiki", "pascal" (CMAL²R's Wikipedia and Pascal VOC 2007), "labelled" (any)
  c.dataset = "jitr_shapes"
  # Each image's captions in its caption file (caption j belongs to image j // this):
  # 0 = the dataset's own (5; IAPR TC-12: 1); a precomp folder of another name needs it
  c.captions_per_image = 0
  c.data_dir = ""  # TFDS data dir; default: <workdir>/../tfds (shared between runs)
  c.shapes_config = "default"  # "default" (10k/1k/1k) or "tiny" (40/10/10)
  # The folder holding <dataset>/{split}_ims.npy and {split}_caps.txt, for the *_precomp
  # datasets (a folder or a gs:// URL)
  c.precomp_root = ""
  c.test_split = "test"  # coco: "testall" (5K; eval_folds = 5 adds the 1K five-fold numbers)
  c.eval_folds = 0  # test metrics also averaged over this many contiguous folds (COCO 1K: 5)
  c.vocab_min_count = 1  # words seen fewer times in the training captions become <unk>
  # The least share of the training captions' words the vocabulary must know (a run under
  # it is refused before anything is written: it would learn from <unk>); 0: no floor
  c.vocab_min_coverage = 0.5
  c.max_caption_len = 48  # tokens a caption is cut to (never with text.tokenizer "nltk")
  # Fine-tuning: a jitr-train workdir whose best checkpoint (its latest without one) gives
  # this run's first parameters and model state (same network shapes, same vocabulary);
  # the optimizer and its schedule start afresh. A resume continues from its own latest.
  c.init_from = ""
  # A fixed vocabulary instead of the one built from the training captions: jitr's
  # vocab.json or an official file (SGRAF's JSON, VSRN / VSE++'s vocab.pkl), e.g. the
  # vocab.json of a workdir made by jitr-import.
  c.vocab_file = ""
  # Captions as the official VSE∞ reads them (jitr.data.wordpiece_vocab), for the "vseinf"
  # network, which needs it: pretrained, a Hugging Face BERT folder (config.json,
  # vocab.txt, the weights) whose vocab.txt tokenises every caption with WordPiece
  # ([CLS] ... [SEP], cut to max_caption_len with [SEP] kept last) instead of the word
  # vocabulary and whose weights start the network's BERT ("" = the word vocabulary);
  # word_augment, the probability per word of the official training augmentation
  # (jitr.data.caption_augment: masked, replaced or deleted; 0.2 in VSE∞; needs
  # pretrained). Validation and test captions are never augmented.
  # tokenizer, what splits captions into the words of the word vocabulary
  # (jitr.experiment.run_tokenizer): "jitr" (runs of letters and digits) or "nltk" (the
  # official VSE++ / VSRN / SGRAF / CVSE nltk.word_tokenize(caption.lower()); captions are
  # then never cut at max_caption_len, as in the official code); "" follows the vocabulary:
  # vocab_file's ("nltk" for an official file), else "jitr". A vocab_file of the other
  # tokenizer is refused; must be "" with pretrained. config.json records the resolved name.
  # caption_form, the string the words are read from (jitr.experiment.run_caption_form):
  # "text" (the caption) or "python3_bytes" (str of its bytes in Python 3, "b'a dog .'", as
  # the official CVSE data.py tokenises it; needs tokenizer "nltk"); "" is "text", or
  # "python3_bytes" in the workdir jitr-import writes of an official CVSE checkpoint.
  c.text = ml_collections.ConfigDict(
    dict(
      pretrained="",  # a Hugging Face BERT folder, e.g. bert-base-uncased ("" = none)
      word_augment=0.0,  # probability per training caption word (VSE∞: 0.2)
      tokenizer="",  # "jitr", "nltk" (the official one) or "" (vocab_file's, else "jitr")
      caption_form="",  # "text", "python3_bytes" (official CVSE) or "" (see above)
    )
  )
  # Image regions in training batches: region_drop, the probability that a row drops each
  # of its regions (VSE∞: 0.2; jitr.data.train_augment); 0 = none. Never in evaluation.
  c.image = ml_collections.ConfigDict(
    dict(region_drop=0.0)  # probability per training region (VSE∞: 0.2)
  )
  # Image folders ("f30k_images", "coco_images", any NAME_images; read as pixels by the
  # "clip" network): json, Karpathy's split file (dataset_flickr30k.json, dataset_coco.json);
  # images, the folder its file names are relative to (COCO: holding train2014/, val2014/);
  # train_splits, the file's splits a run trains on (COCO's restval joins train).
  c.karpathy = ml_collections.ConfigDict(
    dict(json="", images="", train_splits=("train", "restval"))
  )
  # Labelled vector datasets ("wiki", "pascal", "labelled"; jitr.data.labelled): each
  # split's image vectors [n, D_img], text vectors [n, D_txt] (pair i = image i, text i) and
  # class labels (ids [n] or 0/1 memberships [n, C]) in .npy or MATLAB .mat files.
  c.labelled = ml_collections.ConfigDict(
    dict(
      folder="",  # the folder holding the files (a folder or a gs:// URL)
      images="{split}_images.npy",  # image vectors of a split ({split}: its name below)
      texts="{split}_texts.npy",  # text vectors of a split
      labels="{split}_labels.npy",  # class ids or memberships of a split
      image_variable="",  # the variable holding them in a .mat file, e.g. "I_{split}"
      text_variable="",  # the same for the text vectors, e.g. "T_{split}"
      label_variable="",  # the same for the labels, e.g. "L_{split}"
      train_name="train",  # the training split's name in file and variable names
      val_name="val",  # the validation split's name (unused when val_pairs > 0)
      test_name="test",  # the test split's name
      first_class=0,  # the id of the first class in label ids (MATLAB's 1-based ids: 1)
      # training pairs held out (evenly spread) as the validation split; 0: val_name's files
      val_pairs=0,
      # in-batch positives: "class" (pairs sharing a class, CMAL²R's relevance) or "pair"
      # (only each pair; the "labels" graded source then grades the others by overlap)
      positives="class",
    )
  )

  # Graded inputs of the losses (objective term "input", default "relevance") and
  # where they come from (jitr.training.graded): "vectors:sentence" (RSC from
  # Sentence-Transformers vectors), "vectors:lsa", "cosine:lsa" (LSEH's S),
  # "coverage:tokens" (token coverage: how much of the caption the image's references
  # state, an idf-weighted BERTScore precision through a codebook of word pieces),
  # "topk:cider" (raw CIDEr-D, SAM's φ), "oracle" (jitr_shapes' exact relevance) or
  # "teacher:WORKDIR" (image-aware: (1 + cos(img_i, cap_j))/2 of a jitr-train workdir's
  # dual encoder, vse or vsrn, trained on the same data; WORKDIR is everything after
  # the first ':'). "hmean:A|B" / "mean:A|B" combine two or more of them elementwise
  # (harmonic mean 2ab/(a+b), RefCLIP-S style; arithmetic mean), positives 1, e.g.
  # "hmean:vectors:sentence|teacher:workdirs/triplet" (quote it in a shell: '|'). On a
  # labelled vector dataset: "labels" (the Jaccard overlap of two pairs' class sets).
  # Estimators' TFRecords and teachers' embeddings are precomputed under
  # <data_dir>/relevance on first use (a teacher's per checkpoint step).
  c.graded = ml_collections.ConfigDict({"relevance": "vectors:sentence"})
  # Settings of each estimator (jitr.relevance.registry.make_estimator_from_settings):
  # the one default of every registered estimator, as in the relevance apps' --config,
  # e.g. --config.estimators.tokens.codebook_size=128. This config differs only in:
  c.estimators = default_estimator_settings()
  c.estimators.lsa.k = 64  # LSEH's 400 needs a richer vocabulary than jitr_shapes' 135 words
  c.top_k = 100  # length of the top-K lists of "topk:" sources
  # Calibration of each graded input before the losses read it (jitr.losses.calibration):
  # a chain applied left to right per query (image queries per row, caption queries per
  # column), positives kept at 1, values in [0, 1]: "minmax" (per-query min-max),
  # "power:P" (r^P), "floor:T" (r < T -> 0), "isotonic:crowdflower-sentence" (the map
  # from RSC to the fraction of CrowdFlower "yes", fitted by jitr-relevance-calibrate),
  # "range:LO:HI" (LO + (HI - LO) r);
  # e.g. --config.calibration.relevance=minmax,power:2. "" = none.
  c.calibration = ml_collections.ConfigDict({"relevance": ""})

  # Concepts of the networks that read them (CVSE): "" builds them from the captions on
  # first use (the num_concepts most frequent content words of the training captions; word
  # vectors "onehot" or "sentence", all-MiniLM-L6-v2 of each word) under
  # <data_dir>/concepts; or a folder written by jitr.data.save_concept_data; or the folder
  # of CVSE's official concept files. labels, how a caption's concepts are found
  # (jitr.experiment.run_concepts): "jitr" (its content words, plurals folded) or
  # "official" (the official data.py's: nltk's words of the caption's Python 3 str(bytes),
  # WordNet noun lemmas; official concept files only; needs wordnet); "" is "official"
  # with official concept files and wordnet set, else "jitr". wordnet, the WordNet 3.0
  # folder holding index.noun and noun.exc (Debian's wordnet-base: /usr/share/wordnet, or
  # nltk_data's corpora/wordnet); "" = none.
  c.concepts = ml_collections.ConfigDict(
    dict(source="", num_concepts=300, vectors="onehot", labels="", wordnet="")
  )

  # The network: model.name of jitr.models.registry ("vse" when unset: this dual encoder;
  # "sgr", "saf", "vsrn", "cvse", "vseinf"; "twobranch" for labelled vectors) and its settings
  c.model = ml_collections.ConfigDict(
    dict(
      image="regions",  # "regions" (precomp / jitr_shapes region features) or "pixels" (CNN)
      text="gru",  # "gru" or "bigru"
      embed_dim=256,  # width of the joint embedding space
      word_dim=128,  # width of the word embeddings
      image_pooling="max",  # "max" (VSE++), "mean" or "gpo" (VSE∞)
      text_pooling="last",  # "last" (VSE++), "mean" or "gpo" (VSE∞)
    )
  )

  # The objective: named terms, each a loss of jitr.losses with its weight and settings,
  # summed (jitr.losses.objective). Max-violation (hardest-negative) triplets learn slowly
  # from a random start (VSE++'s slow first epochs), so, as VSE∞ does, the first epoch uses the
  # sum-of-hinges triplet ("warmup") and the hardest-negative term starts at
  # epoch 1 (jitr.losses.objective: from_epoch / until_epoch).
  c.loss = with_warmup({"triplet": {"weight": 1.0, "margin": 0.2, "mining": "max"}})
  # from the first step; top_m = M > 0: Smooth-NDCG@M (each query's M candidates of the
  # largest gains, ranked among all: N·M pairs a query instead of N²), 0: every candidate;
  # window: the same ranks summed only over each candidate's unsaturated neighbours
  c.loss.smooth_ndcg = {"weight": 1.0, "temperature": 0.01, "top_m": 0, "window": False}

  # The optimizer (after clipping the gradients' global norm) and its step-decay schedule
  c.optimizer = ml_collections.ConfigDict(
    dict(
      name="adam",  # "adam" or "adamw"
      learning_rate=5e-4,
      grad_clip=2.0,  # the gradients' global norm is clipped to this
      decay_epochs=(3,),  # the learning rate is multiplied by decay_factor at these epochs
      decay_factor=0.1,
      # {top-level module: its own decay factor} at the same epochs (CVSE: {"gcn": 0.2})
      module_decay_factors={},
      # {top-level module: learning-rate factor} on the same schedule (VSE∞'s BERT: 0.1)
      module_lr_factors={},
      weight_decay=1e-4,  # AdamW's decoupled weight decay (unused by "adam")
      # "step" (decay_epochs) or "cosine": open_clip's linear warmup over warmup_steps,
      # then a cosine down to 0 at the run's last step (decay_epochs unused)
      schedule="step",
      warmup_steps=0,  # steps of the cosine schedule's warmup
      b2=0.999,  # Adam's second-moment decay (open_clip's ViTs: 0.98)
      eps=1e-8,  # Adam's epsilon (open_clip's ViTs: 1e-6)
      # AdamW decays only parameters of rank >= 2, as open_clip (its biases, norms, class
      # token and logit scale/bias excluded)
      decay_matrices_only=False,
      # top-level modules never updated (LiT's locked image tower: ("visual",) of "clip")
      frozen_modules=(),
      # layer-wise learning-rate decay d: a parameter r layers below the output (its
      # tower's stem r = L + 1, block i r = L - i) learns at d^r times the rate ("clip")
      layer_decay=1.0,
    )
  )
  c.batch_size = 128  # image-caption pairs per step, over all devices and processes
  # the share of the training images (with their captions) the epochs draw from, the same
  # images for every seed and network (SAM's reduced data: 0.1 of Flickr30K); 1.0: all
  c.train_fraction = 1.0
  c.num_epochs = 4  # ~4.3 steps/s on 2 cores: 4 × 390 steps ≈ 6 min
  c.backend = "shard_map"  # data parallelism over the devices: "shard_map" or "pmap"
  c.log_every_steps = 50  # train scalars and progress (steps/s, ETA) every this many steps
  # validate (and keep the best checkpoint) also every this many steps within an epoch, as
  # the official code's val_step (LSEH: 500, SGRAF 1000); 0: after every epoch only. Each
  # validation is in <workdir>/validation.json
  c.eval_every_steps = 0
  c.prefetch = 2  # batches put on the devices ahead of the step (jitr.training.prefetch)
  # JAX's persistent compilation cache under <data_dir>/jax_cache (or the folder
  # $JAX_COMPILATION_CACHE_DIR names): a second run reuses the compiled steps
  # (False: compile everything afresh).
  c.compilation_cache = True
  c.eval_batch_size = 500  # images (and captions) scored per block in validation and test
  # The widths (tokens) a training batch's captions are cut to: the smallest holding the
  # batch's longest caption. Each width compiles the train step once; () pads every batch
  # to the split's longest caption (one compile, more padding). The scores are the same.
  c.token_buckets = (8, 12, 16, 24, 32, 48)
  # The length-sorted chunks a training batch's captions are encoded in, each cut to its
  # own bucket (1: the whole batch at one width). For networks that encode each caption
  # alone (vse, vseinf): the same pairs and objective, less padding for a transformer;
  # each tuple of chunk widths compiles the train step once.
  c.token_chunks = 1
  # The chunks each device's rows go through the towers in (GradCache: embeddings without
  # activations, the loss's gradient at them, then each chunk's backward): the same
  # update with one chunk's activations in memory, one more forward pass of compute. For
  # networks without batch statistics or auxiliary losses; 1: the whole batch at once.
  c.grad_chunks = 1
  # The chunks each device's query rows are scored and put through the loss in, each
  # chunk's scores computed again in the backward pass: the same update holding [b/K, N]
  # of the similarity, targets and graded inputs instead of [b, N] (networks that score
  # embeddings; 1: all rows at once).
  c.query_chunks = 1

  # Multi-host runs. Unset (""/0/-1): join the job JAX detects (Cloud TPU pod slice,
  # SLURM, Open MPI, Kubernetes), a single process without one; given values must match it.
  c.distributed = ml_collections.ConfigDict(
    dict(
      coordinator_address="",
      num_processes=0,
      process_id=-1,
      stop_check_every_steps=10,  # steps between the processes' agreements on a SIGTERM
      heartbeat_timeout_s=100,  # a process silent this long is dead: the job stops
    )
  )
  return c
