// The official OpenAI SDK, unchanged, against `vllm-cpp serve`: completions,
// chat, streaming of both, model listing and an error surfacing as the SDK's
// typed exception.  Usage: node openai_client_test.mjs BASE_URL
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test-key" });
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };

const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === "stories260K", `models ${JSON.stringify(models.data)}`);

const completion = await client.completions.create({
  model: "stories260K", prompt: "Once upon a time", max_tokens: 16, temperature: 0,
});
const text = completion.choices[0].text;
check(text.startsWith(", there was a little girl"), `completion text ${JSON.stringify(text)}`);
check(completion.usage.completion_tokens === 16 && completion.choices[0].finish_reason === "length", "usage");

let streamed = "";
const stream = await client.completions.create({
  model: "stories260K", prompt: "Once upon a time", max_tokens: 16, temperature: 0, stream: true,
});
for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
check(streamed === text, `streamed completion ${JSON.stringify(streamed)} vs ${JSON.stringify(text)}`);

const messages = [{ role: "user", content: "Tell me a story" }];
const chat = await client.chat.completions.create({ model: "stories260K", messages, max_tokens: 20, temperature: 0 });
const content = chat.choices[0].message.content;
check(chat.choices[0].message.role === "assistant" && content.length > 0, `chat ${JSON.stringify(chat.choices)}`);

let chatStreamed = "";
const chatStream = await client.chat.completions.create({
  model: "stories260K", messages, max_tokens: 20, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
let usage = null;
for await (const chunk of chatStream) {
  chatStreamed += chunk.choices[0]?.delta?.content ?? "";
  if (chunk.usage) usage = chunk.usage;
}
check(chatStreamed === content, `streamed chat ${JSON.stringify(chatStreamed)} vs ${JSON.stringify(content)}`);
check(usage !== null && usage.completion_tokens === 20, `stream usage ${JSON.stringify(usage)}`);

// Tool calling: "required" and a named function always give arguments that parse and fit the
// parameters; the SDK's own stream helper assembles streamed calls into the same final message.
const tools = [{ type: "function", function: { name: "get_weather", parameters: {
  type: "object", properties: { city: { type: "string", maxLength: 16 }, days: { type: "integer", minimum: 1, maximum: 7 } },
  required: ["city", "days"], additionalProperties: false } } }];
const fits = (args) => Object.keys(args).sort().join() === "city,days" && typeof args.city === "string" &&
  args.city.length <= 16 && Number.isInteger(args.days) && args.days >= 1 && args.days <= 7;
for (const tool_choice of ["required", { type: "function", function: { name: "get_weather" } }]) {
  const request = { model: "stories260K", messages, tools, tool_choice, max_tokens: 80, temperature: 0.8, seed: 5 };
  const answer = await client.chat.completions.create(request);
  const calls = answer.choices[0].message.tool_calls;
  check(calls.length >= 1 && calls.every((c) => c.function.name === "get_weather" && fits(JSON.parse(c.function.arguments))),
    `tool_choice ${JSON.stringify(tool_choice)}: ${JSON.stringify(answer.choices[0])}`);
  const final = await client.beta.chat.completions.stream(request).finalChatCompletion();
  const streamedCalls = final.choices[0].message.tool_calls.map((c) => [c.function.name, c.function.arguments]);
  check(JSON.stringify(streamedCalls) === JSON.stringify(calls.map((c) => [c.function.name, c.function.arguments])) &&
    final.choices[0].finish_reason === answer.choices[0].finish_reason,
    `streamed tool calls ${JSON.stringify(final.choices[0])} vs ${JSON.stringify(answer.choices[0])}`);
}
const noTools = await client.chat.completions.create({
  model: "stories260K", messages, tools, tool_choice: "none", max_tokens: 20, temperature: 0,
});
check(noTools.choices[0].message.content === content && noTools.choices[0].message.tool_calls.length === 0,
  `tool_choice none ${JSON.stringify(noTools.choices[0])}`);

try {
  await client.completions.create({ model: "stories260K", prompt: "x", temperature: 5 });
  failures.push("an out-of-range temperature was accepted");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.status === 400, `error class ${e.constructor.name} ${e.status}`);
  check(e.error?.param === "temperature" || /temperature/.test(e.message), `error names the field: ${e.message}`);
}
try {
  await client.completions.create({ model: "no-such-model", prompt: "x" });
  failures.push("an unknown model was accepted");
} catch (e) {
  check(e instanceof OpenAI.NotFoundError, `unknown model: ${e.constructor.name}`);
}
const unauthorized = new OpenAI({ baseURL: process.argv[2], apiKey: "wrong", maxRetries: 0 });
try {
  await unauthorized.models.list();
  failures.push("a wrong API key was accepted");
} catch (e) {
  check(e instanceof OpenAI.AuthenticationError, `wrong key: ${e.constructor.name}`);
}

for (const f of failures) console.log(`FAIL: ${f}`);
console.log(failures.length ? "FAILED" : "all OpenAI SDK checks passed");
process.exit(failures.length ? 1 : 0);
