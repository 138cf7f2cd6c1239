// The contract page's logic: settings and conversations in localStorage, one openai-chat streaming call
// per message. Deliberately tiny; it exists so the harness can be tested without the real app.

const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
const load = (key, fallback) => JSON.parse(localStorage.getItem(key) ?? JSON.stringify(fallback));
const settings = load('settings', {});
const conversations = load('conversations', []);
const persist = () => {
  localStorage.setItem('settings', JSON.stringify(settings));
  localStorage.setItem('conversations', JSON.stringify(conversations));
};

function messageElement(message) {
  const el = document.createElement('div');
  el.dataset.testid = 'message';
  const content = document.createElement('p');
  content.dataset.testid = 'message-content';
  el.append(content);
  updateMessageElement(el, message);
  return el;
}

function updateMessageElement(el, message) {
  el.dataset.role = message.role;
  el.dataset.status = message.status;
  el.firstChild.textContent = message.content;
}

function showConversation(conversation) {
  byTestId('message-list').replaceChildren(...conversation.messages.map(messageElement));
}

function showConversationList() {
  const items = conversations.map((conversation, i) => {
    const li = document.createElement('li');
    li.dataset.testid = 'conversation-item';
    li.dataset.conversationId = String(i);
    li.textContent = conversation.title;
    li.onclick = () => showConversation(conversation);
    return li;
  });
  byTestId('conversation-list').replaceChildren(...items);
}

/** Yields the content deltas of an openai-chat SSE body. */
async function* chatDeltas(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer.slice('data: '.length, end);
      buffer = buffer.slice(end + 2);
      if (data !== '[DONE]') yield JSON.parse(data).choices[0]?.delta?.content ?? '';
    }
  }
}

async function send() {
  const text = byTestId('composer-input').value;
  const conversation = { title: text.slice(0, 50), messages: [{ role: 'user', content: text, status: 'complete' }] };
  conversations.push(conversation);
  persist();
  showConversationList();
  showConversation(conversation);
  const reply = { role: 'assistant', content: '', status: 'streaming' };
  conversation.messages.push(reply);
  const el = messageElement(reply);
  byTestId('message-list').append(el);
  const response = await fetch(`${settings.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: settings.model, stream: true, messages: [{ role: 'user', content: text }] }),
  });
  for await (const delta of chatDeltas(response.body)) {
    reply.content += delta;
    updateMessageElement(el, reply);
  }
  reply.status = 'complete';
  updateMessageElement(el, reply);
  persist();
}

byTestId('settings-open').onclick = () => document.getElementById('settings').showModal();
byTestId('settings-save').onclick = () => {
  settings.url = byTestId('settings-endpoint-url').value;
  settings.protocol = byTestId('settings-protocol').value;
  settings.model = byTestId('settings-model').value;
  persist();
  document.getElementById('settings').close();
};
byTestId('send-button').onclick = send;
showConversationList();
