// The upload page's service worker: Uppy Golden Retriever's blob cache. It keeps the bytes
// of files being uploaded across a reload (IndexedDB keeps only files up to 10 MiB), so a
// reloaded page resumes large uploads instead of asking for the file again.
import '@uppy/golden-retriever/lib/ServiceWorker.js';
