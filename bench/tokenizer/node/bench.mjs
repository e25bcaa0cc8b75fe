// Encode throughput of Hugging Face's Rust tokenizers (the `tokenizers` npm
// package, one thread) and of transformers.js, on the same corpus as
// tokenizer_throughput.cpp: the texts repeated to about TARGET_MB, encoded one
// text at a time without special tokens.  Prints one JSON line per library.
// Usage: node bench.mjs TOKENIZER_DIR CORPUS.jsonl [TARGET_MB] [PASSES]
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from 'tokenizers';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dir, corpusPath, targetArg, passesArg] = process.argv.slice(2);
const targetBytes = Number(targetArg ?? 10) * 1e6;
const passes = Number(passesArg ?? 5);
const corpus = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l).text);
const texts = [];
let bytes = 0;
while (bytes < targetBytes) {
  for (const t of corpus) {
    texts.push(t);
    bytes += Buffer.byteLength(t, 'utf8');
  }
}

function report(name, rates, tokens) {
  rates.sort((a, b) => a - b);
  console.log(JSON.stringify({ library: name, mb_per_s_median: +rates[Math.floor(rates.length / 2)].toFixed(2),
                               mb_per_s_best: +rates[rates.length - 1].toFixed(2), bytes, tokens }));
}

// Rust: encodeBatch over all texts, so that the per-call cost of the Node
// binding does not count; RAYON_NUM_THREADS=1 keeps it to one thread.
{
  const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const rates = [];
  let tokens = 0;
  for (let p = 0; p < passes; ++p) {
    const start = process.hrtime.bigint();
    const encodings = await tok.encodeBatch(texts, { addSpecialTokens: false });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    tokens = encodings.reduce((n, e) => n + e.getIds().length, 0);
    rates.push(bytes / 1e6 / seconds);
  }
  report('tokenizers (Rust, npm)', rates, tokens);
}

// Rust again on the same text joined into ~1 MB strings (newline-separated):
// nearly no binding overhead, so this is the library's own speed.
{
  const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const chunks = [];
  let current = [];
  let size = 0;
  for (const t of texts) {
    current.push(t);
    size += Buffer.byteLength(t, 'utf8') + 1;
    if (size >= 1e6) {
      chunks.push(current.join('\n'));
      current = [];
      size = 0;
    }
  }
  if (current.length) chunks.push(current.join('\n'));
  const rates = [];
  let tokens = 0;
  for (let p = 0; p < passes; ++p) {
    tokens = 0;
    const start = process.hrtime.bigint();
    for (const c of chunks) tokens += (await tok.encode(c, null, { addSpecialTokens: false })).getIds().length;
    rates.push(bytes / 1e6 / (Number(process.hrtime.bigint() - start) / 1e9));
  }
  report('tokenizers, 1 MB strings', rates, tokens);
}

{
  env.allowRemoteModels = false;
  env.localModelPath = path.dirname(path.resolve(dir)) + '/';
  const tok = await AutoTokenizer.from_pretrained(path.basename(path.resolve(dir)));
  const rates = [];
  let tokens = 0;
  for (let p = 0; p < Math.min(passes, 3); ++p) {
    tokens = 0;
    const start = process.hrtime.bigint();
    for (const t of texts) tokens += tok.encode(t, { add_special_tokens: false }).length;
    rates.push(bytes / 1e6 / (Number(process.hrtime.bigint() - start) / 1e9));
  }
  report('transformers.js', rates, tokens);
}
