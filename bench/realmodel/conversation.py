"""The 10-turn conversation the turns and frontends benches hold with the model."""

CONVERSATION = [
    "Hi! My name is Sam.",
    "Add a task: buy milk tomorrow",
    "What's on my to-do list?",
    "Remember that my sister Ann lives in Porto.",
    "What time is it?",
    "Add a note called shopping: eggs, bread, butter",
    "Remind me in 30 minutes to call Ann",
    "Which tasks are due?",
    "Thanks! Where does Ann live?",
    "Bye!",
]
