"""What makes the app safe as a public Space, apart from the lesson and the page: the process (`process`: allocator,
ZeroGPU, SIGTERM), the settings (`settings`), the heavy lane and its deadlines (`lane`), the routes and bodies the
outside world reaches (`routes`), heavy work admitted at the door (`admission`), all behind one call from app.py
(`harden.harden`). `process` imports nothing heavy: app.py calls `process.prepare()` before torch and Gradio."""
