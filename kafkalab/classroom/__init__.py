"""Classroom mode: graded exercises with public and hidden checks, packs, and an autograder.

Theory of operation
-------------------
Each chapter (``book/_src/NN-title.py``) and lab (``labs/_src/NN-title.py``) is the
*instructor's source*: it holds the answers and the hidden checks. Its exercise cells follow one
convention, so a new chapter joins by following it:

* a cell tagged ``answer`` holds the learner's part between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION``. Inside that region, lines starting ``### BLANK`` are what the learner
  starts from; every other line is the solution::

      # %% tags=["answer"]
      ### BEGIN SOLUTION
      ### BLANK my_prediction = None  # <- your answer, in ms
      my_prediction = 2300
      ### END SOLUTION

* the cell tagged ``check`` right after it is graded (one point). A lab that asks several
  predictions up front, before any figure could give them away, puts each check later, where
  the engine's answer is first computed; the n-th check then grades the n-th answer. Its public part calls
  :func:`kafkalab.book.check_prediction` (or asserts what a "change the engine" exercise must
  achieve), so it refuses a blank or wrong answer with a hint and passes only on the engine's
  value. An optional region between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
  is run by the instructor only: it checks the answer key itself, so a submission that edits the
  public check's variables, or redefines ``check_prediction``, still fails.

From one source the build (``book/_build.py``, ``labs/_build.py``) writes two notebooks:

====================================  =================================================
``book/_instructor/NN-title.ipynb``   answers and hidden checks, nbgrader cell metadata,
                                      stored outputs: CI runs it under nbval
``book/NN-title.ipynb``               the learner's: blanks, public checks, no outputs
                                      in exercise cells; not run by nbval
====================================  =================================================

``make classroom`` (:mod:`kafkalab.classroom.pack`) turns the instructor notebooks into a
student pack (learner notebooks without outputs) and an instructor pack, which is an nbgrader
course directory. :mod:`kafkalab.classroom.grade` runs nbgrader's autograder over a folder of
submissions, ``SUBMISSIONS/<student>/NN-title.ipynb``, and writes one CSV row per notebook.
For chapter 08's first exercise the grader sees, in a correct submission::

    answer-1  my_prediction = 2300        (the learner's cell, kept)
    check-1   check_prediction(...) + hidden checks   -> passes, 1 of 1 point

A submission whose cell loops is interrupted after the cell time limit and graded like one that
raised: that cell's checks fail, the rest are graded as usual.
"""
