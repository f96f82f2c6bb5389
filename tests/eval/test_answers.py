"""Answer extraction on realistic model outputs for every task, including the traps."""

from __future__ import annotations

import pytest

from giant.eval.answers import extract_label

TCGA = (
    ["Glioblastoma multiforme", "Ovarian serous cystadenocarcinoma", "Liver hepatocellular carcinoma"]
    + [f"Cancer type {n}" for n in range(4, 28)]
    + ["Uveal Melanoma", "Cholangiocarcinoma", "Thymoma"]
)
GTEX = ["Esophagus", "Artery", "Skin", "Adipose", "Colon", "Heart", "Muscle", "Nerve", "Stomach", "Thyroid",
        "Breast", "Spleen", "Pancreas", "Lung", "Brain", "Small Intestine", "Adrenal Gland", "Liver",
        "Kidney", "Prostate"]  # fmt: skip
EXPERT = ["Low", "Medium", "High", "Cannot determine"]
SLIDEBENCH_NUMERIC = ["2", "3", "4", "5"]
THYMUS = ["Metastatic squamous cell carcinoma", "Thymoma", "Thymoma type AB", "All of the above"]

REPORT = (
    "<report>\nThe overview at (0, 0) shows 3 tissue fragments. At x=20000 I zoomed into 2 regions; "
    "option 1 seemed unlikely. Nuclear grade 4 features, 12 mitoses per 10 HPF, Answer pending.\n"
    'Notes: {"region": 2, "finding": "necrosis"}.\n</report>\n'
)


@pytest.mark.parametrize(
    ("text", "options", "label", "method"),
    [
        # the format the prompt asks for
        (REPORT + '<response>\n```json\n{"answer": 2}\n```\n</response>', EXPERT, 2, "response_json"),
        (REPORT + '<response>{"answer": "3"}</response>', TCGA, 3, "response_json"),
        (REPORT + '<response>{"answer": 30}</response>', TCGA, 30, "response_json"),
        (REPORT + "<response>{'answer': 14}</response>", GTEX, 14, "response_json"),
        (REPORT + '<response>{"answer": 2,}</response>', EXPERT, 2, "response_json"),
        (REPORT + '<response>{"answer": "Small Intestine"}</response>', GTEX, 16, "response_json"),
        (REPORT + '<response>{"answer": "B"}</response>', EXPERT, 2, "response_json"),
        (REPORT + '<response>{"answer": "3. High"}</response>', EXPERT, 3, "response_json"),
        (REPORT + '<response>{"Answer": 4.0}</response>', EXPERT, 4, "response_json"),
        # response without JSON
        (REPORT + "<response>3</response>", EXPERT, 3, "bare"),
        (REPORT + "<response>(C)</response>", EXPERT, 3, "bare"),
        (REPORT + "<response>Thymoma type AB</response>", THYMUS, 3, "option_text"),
        (
            REPORT + "<response>The answer is Thymoma type AB, given the mixed pattern.</response>",
            THYMUS,
            3,
            "answer_phrase",
        ),
        (REPORT + "<response>Option 4</response>", EXPERT, 4, "bare"),
        (REPORT + "<response>B) Medium</response>", EXPERT, 2, "bare"),
        # unclosed response block
        (REPORT + '<response>{"answer": 1}', EXPERT, 1, "response_json"),
        # no tags: the last JSON object wins over earlier ones
        ('I first thought {"answer": 1}. Final:\n```json\n{"answer": 4}\n```', EXPERT, 4, "last_json"),
        ('Brace in prose {like this. Then {"answer": 2}', EXPERT, 2, "last_json"),
        ('{"note": "a \\"quoted\\" } brace"} {"answer": 3}', EXPERT, 3, "last_json"),
        ('{"response": {"reasoning": "zoomed twice", "answer": 2}}', EXPERT, 2, "last_json"),
        # no JSON: explicit phrases only
        ("The answer is 3, a high mitotic rate is seen.", EXPERT, 3, "answer_phrase"),
        ("Looking at 5 regions, I conclude. Answer: B", EXPERT, 2, "answer_phrase"),
        ("**Final answer:** 2", EXPERT, 2, "answer_phrase"),
        ("Final answer: option 3", EXPERT, 3, "answer_phrase"),
        ("After review the best choice is (D).", EXPERT, 4, "choice_phrase"),
        ("Option 1 looked unlikely, option 4 too. I would choose option 2.", EXPERT, 2, "choice_phrase"),
        ("Esophagus", GTEX, 1, "option_text"),
        ("adrenal gland.", GTEX, 17, "option_text"),
        ("The answer is 3", SLIDEBENCH_NUMERIC, 3, "answer_phrase"),  # option number, not the text "3"
        (REPORT + "Final answer: 2", EXPERT, 2, "answer_phrase"),
        # an answer object the model wrote inside its report, then a different one after it
        (
            '<report>I considered {"answer": 1} but rejected it.</report>\nFinal answer: 2',
            EXPERT,
            2,
            "answer_phrase",
        ),
        ('<report>Thorough look; my answer is {"answer": 4}</report>', EXPERT, 4, "last_json"),
    ],
)
def test_option_tasks(text: str, options: list[str], label: int, method: str) -> None:
    result = extract_label(text, "tcga_expert_vqa", options)
    assert (result.label, result.method) == (label, method)


@pytest.mark.parametrize(
    "text",
    [
        "The answer is a high-grade carcinoma.",  # the article "a" is not option 1
        "Answer: A carcinoma with glandular features.",
        "I see 3 regions of necrosis and 2 of fibrosis, consistent with High grade or Low grade.",
        REPORT,  # a report full of numbers but no answer
        '<response>{"answer": YOUR_ANSWER}</response>',
        "",
        "I cannot determine this from the image",
        "Option 1 seemed unlikely; (B) and (C) are both possible.",
    ],
)
def test_option_tasks_without_an_answer_fail(text: str) -> None:
    result = extract_label(text, "tcga_expert_vqa", EXPERT)
    assert result.label is None
    assert result.method == "none"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ('<response>{"answer": 7}</response>', "not in 1..4"),
        ('<response>{"answer": 0}</response>', "not in 1..4"),
        ('{"answer": "E"}', "not in 1..4"),
        ("The answer is 31.", "not in 1..4"),
    ],
)
def test_out_of_range_answers_are_invalid(text: str, detail: str) -> None:
    result = extract_label(text, "tcga_expert_vqa", EXPERT)
    assert result.label is None and result.method == "invalid" and detail in result.detail


def test_letters_respect_the_option_count() -> None:
    assert extract_label("Answer: D", "x", ["a", "b", "c"]).label is None
    assert extract_label("Answer: C", "x", ["a", "b", "c"]).label == 3


PANDA_JSON = (
    '```json\n{{\n  "primary_pattern": {p},\n  "secondary_pattern": {s},\n'
    '  "total_score": {t},\n  "isup_grade": {g}\n}}\n```'
)


@pytest.mark.parametrize(
    ("text", "label", "method"),
    [
        (REPORT + "<response>" + PANDA_JSON.format(p=3, s=4, t=7, g=2) + "</response>", 2, "response_json"),
        (REPORT + PANDA_JSON.format(p=4, s=5, t=9, g=5), 5, "last_json"),
        (PANDA_JSON.format(p=4, s=3, t=7, g='"3"'), 3, "last_json"),
        (PANDA_JSON.format(p=4, s=3, t=7, g='"Grade 3"'), 3, "last_json"),
        (PANDA_JSON.format(p="null", s="null", t="null", g="null"), 0, "last_json_null_as_zero"),
        ('{"primary_pattern": 4, "secondary_pattern": 3, "total_score": 7}', 3, "last_json_gleason"),
        ('{"primary_pattern": 3, "secondary_pattern": 3}', 1, "last_json_gleason"),
        ('{"primary_pattern": 4, "secondary_pattern": 4}', 4, "last_json_gleason"),
        ("Gleason 3 + 4 = 7 in most cores, so ISUP grade 2.", 2, "grade_phrase"),
        ("The tumour is Gleason score 5+4.", 5, "text_gleason"),
        ("Grade group 4", 4, "grade_phrase"),
        ("My answer is 0 (benign).", 0, "answer_phrase"),
        ("1", 1, "bare"),
    ],
)
def test_panda(text: str, label: int, method: str) -> None:
    result = extract_label(text, "panda", [])
    assert (result.label, result.method) == (label, method)


def test_panda_null_without_the_zero_rule_fails() -> None:
    text = PANDA_JSON.format(p="null", s="null", t="null", g="null")
    result = extract_label(text, "panda", [], panda_null_as_zero=False)
    assert result.label is None and result.method == "last_json_null"


@pytest.mark.parametrize("text", ['{"isup_grade": 6}', "ISUP grade 7", "The answer is B", "benign"])
def test_panda_invalid_or_missing(text: str) -> None:
    assert extract_label(text, "panda", []).label is None


@pytest.mark.parametrize(
    "text",
    [
        'My answer is {"isup_grade": 3',  # cut off before the closing brace
        '<report>Gleason 4+3 in two cores.</report>\n<response>{"primary_pattern": 4, "isup_grade": 3',
        '{"primary_pattern": 4, "secondary_pattern": 3, "total_score": 7, "isup_grade": 3',
        "isup_grade: 3",
        '"isup_grade":3',
        "'isup_grade': 3",
        'The grade: "isup_grade": "3"',
    ],
)
def test_panda_grade_key_forms_and_truncated_objects(text: str) -> None:
    """Issue 9 case 4: the quoted key form, as a truncated JSON object leaves it, reads as the grade."""
    result = extract_label(text, "panda", [])
    assert (result.label, result.method) == (3, "grade_phrase")


def test_panda_null_grade_is_unchanged_by_the_key_forms() -> None:
    assert extract_label('{"isup_grade": null}', "panda", []).label == 0
    kept_null = extract_label('{"isup_grade": null}', "panda", [], panda_null_as_zero=False)
    assert (kept_null.label, kept_null.method) == (None, "last_json_null")
    assert extract_label('My answer is {"isup_grade": null', "panda", []).label is None


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n", "<response> </response>", "**", '""'])
@pytest.mark.parametrize("options", [["a", "", "c"], ["a", "  ", "c"], ["", "b"]])
def test_an_empty_reply_never_selects_an_option(text: str, options: list[str]) -> None:
    """Issue 9 case 4: silence (or bare markup) is no answer, even when an option's text is empty."""
    result = extract_label(text, "tcga_slidebench", options)
    assert result.label is None and result.method == "none"


def test_an_option_with_empty_text_is_still_chosen_by_number() -> None:
    assert extract_label('<response>{"answer": 2}</response>', "x", ["a", "", "c"]).label == 2
    assert extract_label("The answer is: ???", "x", ["a", "", "c"]).label is None


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_an_empty_reply_is_no_grade(text: str) -> None:
    result = extract_label(text, "panda", [])
    assert result.label is None and "empty reply" in result.detail


# Issue 25: option texts chosen to hold what a text-level JSON repair rewrote (null -> None, a comma
# before a brace); the answer string must reach the option match exactly as the model wrote it.
ODD_OPTIONS = ["null hypothesis", "None of the above", "It's benign, }", "true positive"]


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("<response>{'answer': 'null hypothesis', 'confident': true}</response>", 1),
        ('{"answer": "null hypothesis", "alternatives": [null,],}', 1),
        ("<response>{'answer': 'None of the above', 'second': None}</response>", 2),
        ('<response>{"answer": "It\'s benign, }"}</response>', 3),
        ("```json\n{'answer': \"It's benign, }\", 'sure': True,}\n```", 3),
        ("{'answer': 'true positive', 'why': 'null, false, True',}", 4),
    ],
)
def test_an_answer_string_is_never_rewritten_before_scoring(reply: str, label: int) -> None:
    result = extract_label(reply, "tcga_expert_vqa", ODD_OPTIONS)
    method = "response_json" if "<response>" in reply else "last_json"
    assert (result.label, result.method) == (label, method)
