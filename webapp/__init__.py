"""What only the web page (app.py) needs: figures, HTML, Markdown texts, CSS and download files.

The model library (`transformer/`) computes; this package shows. `figures` draws matplotlib figures, `views` holds
the view metadata and HTML of tokens, `model_card` writes the model card, `texts` and `style` are the page's prose
and CSS, `downloads` keeps the files of the download buttons.
"""
