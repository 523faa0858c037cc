// Gatehouse demo SPA — a starting point to copy.
//
// The rules of a backend-for-frontend, as this file follows them:
//  * The browser never holds a token. There is nothing to read: the session is an HttpOnly cookie
//    that JavaScript cannot see, and the gateway attaches the access token to API calls itself.
//  * Every call to /user and to the API carries the `X-CSRF: 1` header. A cross-site form cannot set
//    a custom header, so the gateway knows the call comes from this page.
//  * A 401 means "signed out" (no session, or it ended): show the sign-in button, never retry blindly.
//  * No inline scripts or styles anywhere: the gateway's Content-Security-Policy forbids them.
//  * Opened signed out, the page tries a silent sign-in once (`/login?prompt=none`): a user still
//    signed in at the provider comes back signed in without seeing a page; otherwise the gateway
//    brings the browser back with `#error=login_required` and the sign-in button is shown.
'use strict';

(() => {
  const CSRF_HEADERS = { 'X-CSRF': '1' };
  const POLL_INTERVAL_MS = 30_000;

  const byId = (id) => document.getElementById(id);
  const ui = {
    status: byId('status'),
    notice: byId('notice'),
    loadingView: byId('loading-view'),
    loadingText: byId('loading-text'),
    silentResult: byId('silent-result'),
    signedOutView: byId('signed-out-view'),
    signedInView: byId('signed-in-view'),
    signIn: byId('signin'),
    signInProviders: byId('signin-providers'),
    userPicture: byId('user-picture'),
    userProvider: byId('user-provider'),
    userProviderName: byId('user-provider-name'),
    signOut: byId('signout'),
    signOutEverywhere: byId('signout-everywhere'),
    sessions: byId('sessions'),
    sessionList: byId('session-list'),
    sessionsStatus: byId('sessions-status'),
    sessionsRefresh: byId('sessions-refresh'),
    userName: byId('user-name'),
    userSub: byId('user-sub'),
    claims: byId('claims').querySelector('tbody'),
    idleExpiresAt: byId('idle-expires-at'),
    idleCountdown: byId('idle-countdown'),
    expiresAt: byId('expires-at'),
    expiresCountdown: byId('expires-countdown'),
    callApi: byId('call-api'),
    apiResult: byId('api-result'),
    liveState: byId('live-state'),
    liveFeed: byId('live-feed'),
  };
  const LIVE_PATH = '/api/live';
  const LIVE_KEEP = 5;          // messages shown
  const LIVE_RETRY_MS = 5_000;  // first reconnect delay after the socket closed while signed in…
  const LIVE_RETRY_MAX_MS = 60_000;  // …doubling up to this (an API without /api/live is not hammered)

  let user = null;       // the last /user answer, or null when signed out
  let providers = [];    // GET /providers: [{name, displayName}], in the gateway's order
  let tickTimer = null;
  let live = null;       // the live-updates WebSocket while signed in
  let liveRetry = null;
  let liveRetryDelay = LIVE_RETRY_MS;
  let silentNote = '';   // what the silent sign-in on load came back with, shown while signed out

  // --- Talking to the gateway -------------------------------------------------------------------

  /** GET /user: the signed-in user, or null on 401. `slide: false` reads without extending the session. */
  async function fetchUser({ slide }) {
    const response = await fetch(slide ? '/user' : '/user?slide=false', {
      headers: CSRF_HEADERS,
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (response.status === 401) return null;
    if (!response.ok) throw new Error(`GET /user answered ${response.status}`);
    return response.json();
  }

  /** Asks /user and shows the answer. `first`: the look on load, which may try a silent sign-in. */
  async function refreshUser({ slide = false, first = false } = {}) {
    try {
      const next = await fetchUser({ slide });
      hideNotice();
      if (next) {
        showSignedIn(next);
      } else if (first && trySilentSignIn()) {
        // On the way to the provider and back: the page stays on "checking" until it is replaced.
      } else {
        const wasSignedIn = user !== null;
        showSignedOut();
        if (wasSignedIn) showNotice('Your session has ended. Sign in again to continue.');
      }
    } catch (error) {
      showNotice(`Could not reach the gateway (${error.message}). Retrying in 30 seconds.`);
      if (!user) showSignedOut();
    }
  }

  /** The current location as a `returnTo` the gateway accepts: a local path, never `//host`. */
  function returnToPath() {
    const path = window.location.pathname + window.location.search;
    return /^\/(?![\/\\])/.test(path) ? path : '/';
  }

  /** `/login` for this page: `provider` with several providers, `silent` for `prompt=none`. */
  function loginUrl({ provider, silent = false } = {}) {
    const chosen = typeof provider === 'string' ? `provider=${encodeURIComponent(provider)}&` : '';
    return `/login?${silent ? 'prompt=none&' : ''}${chosen}returnTo=${encodeURIComponent(returnToPath())}`;
  }

  function signIn(provider) {
    // A top-level navigation: the gateway redirects to the provider and, after login, back here.
    window.location.assign(loginUrl({ provider }));
  }

  // --- Silent sign-in ---------------------------------------------------------------------------
  // Opened signed out, the page navigates once to `/login?prompt=none`: a provider that still has a
  // session of its own signs the user in without showing anything, and the browser lands back here
  // signed in. One that cannot answers login_required (or interaction_required, consent_required,
  // account_selection_required), and the gateway sends the browser back with `#error=<code>`.
  // sessionStorage (one per tab) makes sure it is tried once, never in a loop:
  //   no mark         try on the next signed-out load
  //   'tried'         tried already; not again until this tab has been signed in
  //   'signed-out'    the user signed out here on purpose: do not sign them straight back in
  // Signing in (in any way) clears the mark. Without sessionStorage it is never tried.
  const SILENT_KEY = 'gatehouse.silentSignIn';
  const SILENT_RESULTS = {
    login_required: 'Not signed in at the provider.',
    interaction_required: 'The provider needs you to sign in yourself.',
    consent_required: 'The provider needs your consent first.',
    account_selection_required: 'The provider needs you to choose an account.',
  };

  function silentMark() {
    try {
      return window.sessionStorage.getItem(SILENT_KEY);
    } catch {
      return 'unavailable';
    }
  }

  function setSilentMark(value) {
    try {
      if (value) window.sessionStorage.setItem(SILENT_KEY, value);
      else window.sessionStorage.removeItem(SILENT_KEY);
    } catch {
      // no storage: silentMark() answers 'unavailable' and nothing is tried
    }
  }

  /** The `#error=<code>` the silent sign-in came back with, removed from the address bar. */
  function takeSilentResult() {
    const code = new URLSearchParams(window.location.hash.slice(1)).get('error');
    if (code === null) return;
    setSilentMark('tried');
    window.history.replaceState(window.history.state, '', window.location.pathname + window.location.search);
    silentNote = SILENT_RESULTS[code]
      || `The silent sign-in did not work (${/^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : 'unknown error'}).`;
    ui.silentResult.dataset.error = code.slice(0, 64);
  }

  /** Starts the silent sign-in when this tab may try it; true when the page is navigating away. */
  function trySilentSignIn() {
    // No list of providers (GET /providers failed): with several, /login would show its chooser.
    if (silentMark() !== null || providers.length === 0) return false;
    setSilentMark('tried');
    if (silentMark() !== 'tried') return false;  // the mark did not stick: a loop could not be stopped
    ui.loadingText.textContent = 'Checking whether you are still signed in at the identity provider…';
    // With several providers, the first one the gateway lists.
    const provider = providers.length > 1 ? providers[0].name : undefined;
    window.location.assign(loginUrl({ provider, silent: true }));
    return true;
  }

  /** GET /providers: with several, one "Continue with …" button each instead of the one "Sign in". */
  async function loadProviders() {
    try {
      const response = await fetch('/providers', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (!response.ok) return;
      providers = (await response.json()).providers || [];
    } catch {
      return;  // the single "Sign in" button still works: /login shows the gateway's own chooser
    }
    if (providers.length < 2) return;
    const buttons = providers.map((provider) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'button primary';
      button.dataset.provider = provider.name;
      button.textContent = `Continue with ${provider.displayName}`;
      button.addEventListener('click', () => signIn(provider.name));
      return button;
    });
    ui.signInProviders.replaceChildren(...buttons);
    ui.signInProviders.hidden = false;
    ui.signIn.hidden = true;
  }

  function setSignOutBusy(busy) {
    ui.signOut.disabled = busy;
    ui.signOutEverywhere.disabled = busy;
  }

  async function signOut() {
    setSignOutBusy(true);
    setSilentMark('signed-out');  // signed out on purpose: the next load must not sign straight back in
    // /user gives a logout URL bound to this session (`/logout?sid=…`). Navigating to it is a
    // top-level GET the gateway accepts because the sid matches; it then sends the browser on to the
    // provider's end-session endpoint, which brings it back here signed out.
    if (user && typeof user.logoutUrl === 'string' && user.logoutUrl.startsWith('/logout?')) {
      window.location.assign(user.logoutUrl);
      return;
    }
    // Fallback: POST /logout (the gateway answers 302 to the provider; fetch cannot follow that
    // cross-origin redirect usefully, so stop it and reload locally).
    try {
      await fetch('/logout', { method: 'POST', headers: CSRF_HEADERS, credentials: 'same-origin', redirect: 'manual' });
    } finally {
      window.location.assign('/');
    }
  }

  /** `POST /logout?everywhere=true`: every session of this user ends, in every browser. */
  async function signOutEverywhere() {
    setSignOutBusy(true);
    setSilentMark('signed-out');
    let response;
    try {
      // Like the fallback above: the gateway answers 302 (to the provider's end-session endpoint or
      // to /), which `redirect: 'manual'` stops as an opaque redirect. This browser's session at the
      // provider is left alone; the mark keeps this tab from signing straight back in with it.
      response = await fetch('/logout?everywhere=true', {
        method: 'POST', headers: CSRF_HEADERS, credentials: 'same-origin', redirect: 'manual',
      });
    } catch (error) {
      showNotice(`Could not reach the gateway to sign out everywhere (${error.message}).`);
      setSignOutBusy(false);
      return;
    }
    if (response.type !== 'opaqueredirect' && !response.ok) {
      // 503: the session store did not answer and nothing was ended; still signed in everywhere.
      showNotice(`Signing out everywhere failed (${response.status}): nothing was ended. Try again.`);
      setSignOutBusy(false);
      return;
    }
    window.location.assign('/');
  }

  // --- Your sessions -------------------------------------------------------------------------------
  // GET /sessions lists every session of the user (one per browser) under a public handle, never the
  // cookie. It counts as activity (it keeps the idle limit moving), so it is asked when the signed-in
  // view appears, on "Refresh" and after a revocation, not by the 30-second poll.

  async function loadSessions() {
    ui.sessionsRefresh.disabled = true;
    try {
      const response = await fetch('/sessions', { headers: CSRF_HEADERS, credentials: 'same-origin', cache: 'no-store' });
      if (response.status === 401) { await refreshUser(); return; }
      if (response.status === 404) { ui.sessions.hidden = true; return; }  // a gateway without /sessions
      if (!response.ok) throw new Error(`GET /sessions answered ${response.status}`);
      const sessions = (await response.json()).sessions || [];
      ui.sessions.hidden = false;
      renderSessions(sessions);
      ui.sessionsStatus.textContent = sessions.length === 1
        ? 'Only this browser is signed in.'
        : `Signed in on ${sessions.length} browsers.`;
    } catch (error) {
      ui.sessionsStatus.textContent = `Could not list the sessions (${error.message}).`;
    } finally {
      ui.sessionsRefresh.disabled = false;
    }
  }

  async function revokeSession(handle, button) {
    button.disabled = true;
    let message;
    try {
      const response = await fetch('/sessions/revoke', {
        method: 'POST',
        headers: { ...CSRF_HEADERS, 'Content-Type': 'application/json' },
        credentials: 'same-origin',
        body: JSON.stringify({ handle }),
      });
      if (response.status === 401) { await refreshUser(); return; }
      if (response.status === 404) {
        message = 'That session had already ended.';
      } else if (!response.ok) {
        throw new Error(`POST /sessions/revoke answered ${response.status}`);
      } else {
        const result = await response.json();
        if (result.current) { await refreshUser(); return; }  // this browser's own session
        message = 'Signed out that session.';
      }
    } catch (error) {
      button.disabled = false;
      ui.sessionsStatus.textContent = `Could not sign that session out (${error.message}).`;
      return;
    }
    await loadSessions();
    if (user) ui.sessionsStatus.textContent = message;
  }

  async function callApi() {
    ui.callApi.disabled = true;
    ui.apiResult.textContent = 'Calling GET /api/hello…';
    try {
      const response = await fetch('/api/hello', {
        headers: CSRF_HEADERS,
        credentials: 'same-origin',
        cache: 'no-store',
      });
      const text = await response.text();
      ui.apiResult.textContent = `${response.status} ${response.statusText}\n\n${prettyJSON(text)}`;
      // A 401 means the session is gone; otherwise the call moved the idle limit: show the new one.
      await refreshUser({ slide: false });
    } catch (error) {
      ui.apiResult.textContent = `Network error: ${error.message}`;
    } finally {
      ui.callApi.disabled = false;
    }
  }

  // --- Live updates over a WebSocket -----------------------------------------------------------
  // A browser cannot add headers to a WebSocket handshake, so there is no X-CSRF here: the gateway
  // checks the Origin header instead (it must be this page's origin) and the session cookie, and
  // attaches the access token upstream. The page still never sees a token.

  function openLive() {
    if (live || !user) return;
    window.clearTimeout(liveRetry);
    liveRetry = null;
    const url = `${window.location.protocol === 'https:' ? 'wss:' : 'ws:'}//${window.location.host}${LIVE_PATH}`;
    const socket = new WebSocket(url);
    live = socket;
    ui.liveState.textContent = 'connecting';
    socket.addEventListener('open', () => {
      ui.liveState.textContent = 'connected';
      liveRetryDelay = LIVE_RETRY_MS;
    });
    socket.addEventListener('message', (event) => {
      const item = document.createElement('li');
      item.textContent = typeof event.data === 'string' ? event.data : '(binary message)';
      ui.liveFeed.prepend(item);
      while (ui.liveFeed.children.length > LIVE_KEEP) ui.liveFeed.lastElementChild.remove();
    });
    socket.addEventListener('close', (event) => {
      if (live !== socket) return;
      live = null;
      ui.liveState.textContent = `closed (${event.code}${event.reason ? `: ${event.reason}` : ''})`;
      // 1008: the gateway ended the session's sockets (signed out elsewhere): ask who we are.
      if (event.code === 1008) { refreshUser({ slide: false }); return; }
      if (user) {
        liveRetry = window.setTimeout(openLive, liveRetryDelay);
        liveRetryDelay = Math.min(liveRetryDelay * 2, LIVE_RETRY_MAX_MS);
      }
    });
  }

  function closeLive() {
    window.clearTimeout(liveRetry);
    liveRetry = null;
    if (live) {
      const socket = live;
      live = null;
      socket.close(1000, 'signed out');
      ui.liveState.textContent = 'closed';
    }
  }

  // --- Rendering --------------------------------------------------------------------------------
  // Only textContent is used: claims come from the provider and are data, never markup.

  function setState(state) {
    document.body.dataset.state = state;
    ui.status.textContent = state;
    ui.loadingView.hidden = true;
    ui.signedOutView.hidden = state !== 'signed-out';
    ui.signedInView.hidden = state !== 'signed-in';
  }

  function showSignedOut() {
    user = null;
    setState('signed-out');
    setSignOutBusy(false);
    ui.silentResult.textContent = silentNote;
    ui.silentResult.hidden = !silentNote;
    ui.sessionList.replaceChildren();
    ui.sessionsStatus.textContent = '';
    stopTicking();
    closeLive();
  }

  function showSignedIn(next) {
    const appeared = user === null;
    user = next;
    setSilentMark(null);  // signed in: a later signed-out load may try the silent sign-in again
    silentNote = '';
    const claims = next.claims || {};
    setState('signed-in');
    ui.userName.textContent = claims.name || claims.preferred_username || claims.email || next.sub;
    ui.userSub.textContent = next.sub;
    // Which provider the user came from, when there is a choice.
    const provider = providers.find((p) => p.name === next.provider);
    ui.userProvider.hidden = providers.length < 2 || !next.provider;
    ui.userProviderName.textContent = provider ? provider.displayName : (next.provider || '');
    // The provider's profile picture (Google's and Facebook's are https URLs on their own hosts;
    // the CSP allows https: and data: images): anything else is not shown.
    const picture = typeof claims.picture === 'string' ? claims.picture : '';
    const showable = picture.startsWith('https://') || picture.startsWith('data:image/');
    ui.userPicture.hidden = !showable;
    if (showable) ui.userPicture.src = picture; else ui.userPicture.removeAttribute('src');
    renderClaims(claims);
    ui.idleExpiresAt.textContent = localTime(next.session?.idleExpiresAt);
    ui.idleExpiresAt.dateTime = isoTime(next.session?.idleExpiresAt);
    ui.expiresAt.textContent = localTime(next.session?.expiresAt);
    ui.expiresAt.dateTime = isoTime(next.session?.expiresAt);
    startTicking();
    openLive();
    if (appeared) loadSessions();
  }

  /** One item per session, this browser's first; every other one with its own "Sign out". */
  function renderSessions(sessions) {
    const ordered = [...sessions.filter((s) => s.current === true), ...sessions.filter((s) => s.current !== true)];
    const items = ordered.map((session) => {
      const item = document.createElement('li');
      item.dataset.handle = session.handle;
      item.dataset.current = String(session.current === true);
      const about = document.createElement('div');
      about.className = 'session-about';
      const title = document.createElement('p');
      title.className = 'session-title';
      const agent = document.createElement('strong');
      agent.className = 'session-agent';
      agent.textContent = describeAgent(session.userAgent);
      title.append(agent);
      if (session.current === true) {
        const badge = document.createElement('span');
        badge.className = 'badge';
        badge.textContent = 'this browser';
        title.append(' ', badge);
      }
      const times = document.createElement('p');
      times.className = 'muted small';
      times.append('Signed in ', timeElement(session.createdAt), ' · last active ', timeElement(session.lastSeenAt));
      const raw = document.createElement('p');
      raw.className = 'muted small session-ua';
      raw.textContent = typeof session.userAgent === 'string' ? session.userAgent : 'No user agent recorded';
      raw.title = raw.textContent;
      about.append(title, times, raw);
      item.append(about);
      if (session.current !== true) {
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'button small-button';
        button.dataset.revoke = session.handle;
        button.textContent = 'Sign out';
        button.setAttribute('aria-label', `Sign out ${agent.textContent}, signed in ${localTime(session.createdAt)}`);
        button.addEventListener('click', () => revokeSession(session.handle, button));
        item.append(button);
      }
      return item;
    });
    ui.sessionList.replaceChildren(...items);
  }

  /** "Chrome on Linux" from a User-Agent header; good enough to tell one's browsers apart. */
  function describeAgent(userAgent) {
    if (typeof userAgent !== 'string' || userAgent.trim() === '') return 'Unknown browser';
    const browsers = [
      [/Edg(?:e|A|iOS)?\//, 'Edge'], [/OPR\//, 'Opera'], [/Firefox\/|FxiOS\//, 'Firefox'],
      [/HeadlessChrome\//, 'Headless Chrome'], [/Chrome\/|CriOS\//, 'Chrome'], [/Version\/[\d.]+.*Safari\//, 'Safari'],
    ];
    const systems = [
      [/Windows/, 'Windows'], [/Android/, 'Android'], [/iPhone|iPad|iPod/, 'iOS'], [/CrOS/, 'ChromeOS'],
      [/Mac OS X|Macintosh/, 'macOS'], [/Linux|X11/, 'Linux'],
    ];
    const browser = browsers.find(([pattern]) => pattern.test(userAgent))?.[1]
      ?? userAgent.trim().split(/[\s(]/)[0].slice(0, 40);
    const system = systems.find(([pattern]) => pattern.test(userAgent))?.[1];
    return system ? `${browser} on ${system}` : browser;
  }

  // Claims that hold NumericDate values (seconds since 1970) get a readable local time beside them.
  const TIME_CLAIMS = new Set(['exp', 'iat', 'nbf', 'auth_time', 'updated_at']);

  function renderClaims(claims) {
    const rows = Object.keys(claims).sort().map((name) => {
      const row = document.createElement('tr');
      const key = document.createElement('td');
      const value = document.createElement('td');
      key.textContent = name;
      const raw = claims[name];
      value.textContent = typeof raw === 'string' ? raw : JSON.stringify(raw);
      if (TIME_CLAIMS.has(name) && typeof raw === 'number') value.textContent += ` (${localTime(raw)})`;
      row.append(key, value);
      return row;
    });
    ui.claims.replaceChildren(...rows);
  }

  // The countdowns tick every second locally; the gateway is asked only every 30 seconds.
  function startTicking() {
    tick();
    if (!tickTimer) tickTimer = window.setInterval(tick, 1000);
  }

  function stopTicking() {
    window.clearInterval(tickTimer);
    tickTimer = null;
  }

  function tick() {
    if (!user) return;
    const now = Date.now() / 1000;
    const idleLeft = (user.session?.idleExpiresAt ?? 0) - now;
    const totalLeft = (user.session?.expiresAt ?? 0) - now;
    renderCountdown(ui.idleCountdown, idleLeft);
    renderCountdown(ui.expiresCountdown, totalLeft);
    // Past either limit the session is over: confirm with the gateway (it will answer 401).
    if (Math.min(idleLeft, totalLeft) <= 0) {
      stopTicking();
      refreshUser({ slide: false });
    }
  }

  function renderCountdown(element, seconds) {
    element.textContent = seconds > 0 ? `(in ${duration(seconds)})` : '(expired)';
    element.classList.toggle('soon', seconds < 120);
  }

  function duration(seconds) {
    const s = Math.floor(seconds);
    const days = Math.floor(s / 86400);
    const hours = Math.floor((s % 86400) / 3600);
    const minutes = Math.floor((s % 3600) / 60);
    const rest = s % 60;
    if (days > 0) return `${days} d ${hours} h`;
    if (hours > 0) return `${hours} h ${String(minutes).padStart(2, '0')} min`;
    if (minutes > 0) return `${minutes} min ${String(rest).padStart(2, '0')} s`;
    return `${rest} s`;
  }

  const localTime = (unix) => (typeof unix === 'number' ? new Date(unix * 1000).toLocaleString() : '—');
  const isoTime = (unix) => (typeof unix === 'number' ? new Date(unix * 1000).toISOString() : '');

  function timeElement(unix) {
    const element = document.createElement('time');
    element.textContent = localTime(unix);
    element.dateTime = isoTime(unix);
    return element;
  }

  function prettyJSON(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text || '(empty body)';
    }
  }

  function showNotice(message) {
    ui.notice.textContent = message;
    ui.notice.hidden = false;
  }

  function hideNotice() {
    ui.notice.hidden = true;
    ui.notice.textContent = '';
  }

  // --- Start --------------------------------------------------------------------------------------

  ui.signIn.addEventListener('click', () => signIn());
  ui.signOut.addEventListener('click', signOut);
  ui.signOutEverywhere.addEventListener('click', signOutEverywhere);
  ui.sessionsRefresh.addEventListener('click', loadSessions);
  ui.callApi.addEventListener('click', callApi);

  // Back from a silent sign-in that did not work (`#error=login_required`): note it, clean the URL.
  takeSilentResult();
  // Opening the page is user activity, so the first look may slide the session; polling must not.
  // The providers first: the signed-in view names the one the user came from, and the silent
  // sign-in needs to know whether there are several.
  loadProviders().finally(() => refreshUser({ slide: true, first: true }));
  window.setInterval(() => refreshUser({ slide: false }), POLL_INTERVAL_MS);

  // Coming back to the tab, or back to this page from the history cache after signing out elsewhere:
  // ask again at once rather than show a stale state for up to 30 seconds.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') refreshUser({ slide: false });
  });
  window.addEventListener('pageshow', (event) => {
    if (event.persisted) refreshUser({ slide: false });
  });
})();
