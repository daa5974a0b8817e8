// ndbench login: exchanges the node's token for a session cookie (POST /api/v1/session)
// and reloads, so the page and its EventSource are then authorized by the cookie. The
// token goes only in the request body: never in a URL, never stored by the page.
'use strict';

(function () {
  const form = document.querySelector('[data-role=login]');
  const msg = document.querySelector('[data-role=login-message]');
  // The UI sends a browser back here when its session ended (expired, or the node
  // restarted): say so, rather than showing a bare form.
  if (sessionStorage.getItem('ndbench-expired')) {
    sessionStorage.removeItem('ndbench-expired');
    msg.textContent = 'Your session ended (expired, or the node restarted): log in again.';
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const input = form.elements.token;
    msg.textContent = '';
    const button = form.querySelector('button');
    button.disabled = true;
    try {
      const r = await fetch('/api/v1/session', {
        method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ token: input.value }), credentials: 'same-origin',
      });
      if (r.ok) {
        input.value = '';
        // Tells the page to offer "Log out" (the cookie itself is HttpOnly).
        sessionStorage.setItem('ndbench-session', '1');
        location.reload();
        return;
      }
      let detail = 'HTTP ' + r.status;
      try { detail = (await r.json()).detail || detail; } catch (err) { /* not JSON */ }
      msg.textContent = 'Not logged in: ' + detail;
      input.select();
    } catch (err) {
      msg.textContent = 'Cannot reach the node: ' + err.message;
    } finally {
      button.disabled = false;
    }
  });
})();
