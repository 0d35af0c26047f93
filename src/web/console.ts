// The console's one script: Turbo (page changes without full reloads, forms over fetch, and
// `<turbo-stream-source>` refreshing a live page when its server-sent events say so). Every
// page works without it.
import '@hotwired/turbo';
import './console.css';
